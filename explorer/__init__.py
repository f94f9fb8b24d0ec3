"""Graph Explorer's engine. Nothing here downloads: the library architectures (explorer/sources/library.py) are built
from their config classes, and every process that imports the engine (the spawned workers too) runs offline."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"


def __getattr__(name: str) -> object:
    """`from explorer import explore` (explorer/notebook.py), imported on first use: a worker process imports this
    package before torch, and must stay light."""
    if name == "explore":
        from explorer.notebook import explore
        return explore
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")
