"""The shapes lab: what each dimension became in torch.compile's cached graphs, and which requests will recompile,
predicted from the guards before any runs."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from explorer.labs.shapes.job import ShapesJob
from explorer.labs.shapes.lab import run_shapes
from explorer.labs.shapes.predict import Outcome
from explorer.labs.shapes.results import ShapesResult
from explorer.labs.shapes.spec import SPEC
from explorer.labs.shapes.view import OUTPUTS, view_of

__all__ = ["OUTPUTS", "SPEC", "Outcome", "ShapesJob", "ShapesResult", "run_shapes", "view_of"]
