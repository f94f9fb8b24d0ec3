"""The shapes lab: what each dimension became in torch.compile's cached graphs, and which requests will recompile,
predicted from the guards before any runs."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from typing import TYPE_CHECKING

from explorer.labs.contract import on_first_use
from explorer.labs.shapes.job import ShapesJob
from explorer.labs.shapes.lab import run_shapes
from explorer.labs.shapes.predict import Outcome
from explorer.labs.shapes.results import ShapesResult

# Its spec and view draw its figures: imported on first use, so that its experiment needs torch alone.
if TYPE_CHECKING:
    from explorer.labs.shapes.spec import SPEC
    from explorer.labs.shapes.view import OUTPUTS, view_of

__getattr__ = on_first_use(__name__, {"spec": ("SPEC",), "view": ("OUTPUTS", "view_of")})

__all__ = ["OUTPUTS", "SPEC", "Outcome", "ShapesJob", "ShapesResult", "run_shapes", "view_of"]
