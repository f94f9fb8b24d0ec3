"""The optimization lab: strategies for serving a dynamic model a workload of requests, measured end to end."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from typing import TYPE_CHECKING

from explorer.labs.contract import on_first_use

# Its spec and view draw its figures: imported on first use, so that its experiment needs torch alone.
if TYPE_CHECKING:
    from explorer.labs.optimize.spec import SPEC

__getattr__ = on_first_use(__name__, {"spec": ("SPEC",)})

__all__ = ["SPEC"]
