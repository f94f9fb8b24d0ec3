"""The deployment lab: freeze the Playground's model into static artefacts and check what survives."""
