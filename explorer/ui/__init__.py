"""The web UI (Gradio): one module per tab, each with its outputs declared beside its builder; one adapter from a
`Progress | result` stream to the status line, the progress bar and a message (`stream.py`); the lab tabs made
from the labs' specs. Everything shown comes from the engine; nothing here measures."""
