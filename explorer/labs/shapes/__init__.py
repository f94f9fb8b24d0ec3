"""The shapes lab: what each dimension became in torch.compile's cached graphs, and which requests will recompile,
predicted from the guards before any runs."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from explorer.labs.shapes.spec import SPEC

__all__ = ["SPEC"]
