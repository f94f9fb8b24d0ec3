"""The debugging lab: the same injected bug in eager, compiled and traced code, side by side."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from typing import TYPE_CHECKING

from explorer.labs.contract import on_first_use
from explorer.labs.debug.lab import DebugResult, run_debug
from explorer.labs.debug.modes import MODES, ModeOutcome

# Its spec and view draw its figures: imported on first use, so that its experiment needs torch alone.
if TYPE_CHECKING:
    from explorer.labs.debug.spec import SPEC
    from explorer.labs.debug.view import OUTPUTS, view_of

__getattr__ = on_first_use(__name__, {"spec": ("SPEC",), "view": ("OUTPUTS", "view_of")})

__all__ = ["MODES", "OUTPUTS", "SPEC", "DebugResult", "ModeOutcome", "run_debug", "view_of"]
