"""The deployment lab: freeze the Playground's model into static artefacts and check what survives."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from typing import TYPE_CHECKING

from explorer.labs.contract import on_first_use
from explorer.labs.deploy.checks import DEFAULT_LENGTHS, structure
from explorer.labs.deploy.job import WORKER
from explorer.labs.deploy.lab import run_deploy
from explorer.labs.deploy.results import LOUD, SILENT, WORKS, DeployResult

# Its spec and view draw its figures: imported on first use, so that its experiment needs torch alone.
if TYPE_CHECKING:
    from explorer.labs.deploy.spec import SPEC
    from explorer.labs.deploy.view import OUTPUTS, DeployOutcome, view_of

__getattr__ = on_first_use(__name__, {"spec": ("SPEC",), "view": ("OUTPUTS", "DeployOutcome", "view_of")})

__all__ = [
    "DEFAULT_LENGTHS", "LOUD", "OUTPUTS", "SILENT", "SPEC", "WORKER", "WORKS", "DeployOutcome", "DeployResult",
    "run_deploy", "structure", "view_of",
]
