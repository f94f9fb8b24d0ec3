"""The debugging lab: the same injected bug in eager, compiled and traced code, side by side."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from explorer.labs.debug.lab import DebugResult, run_debug
from explorer.labs.debug.modes import MODES, ModeOutcome
from explorer.labs.debug.spec import SPEC
from explorer.labs.debug.view import OUTPUTS, view_of

__all__ = ["MODES", "OUTPUTS", "SPEC", "DebugResult", "ModeOutcome", "run_debug", "view_of"]
