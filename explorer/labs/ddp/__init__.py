"""The multi-process lab: dynamic graphs under DistributedDataParallel, on several processes of this machine."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from typing import TYPE_CHECKING

from explorer.labs.contract import on_first_use
from explorer.labs.ddp.job import WORKER
from explorer.labs.ddp.lab import MIN_STEPS, ddp_setup, run_ddp
from explorer.labs.ddp.results import DdpResult, WorldRun
from explorer.labs.ddp.unused import PHASES, TOLERANCE

# Its spec and view draw its figures: imported on first use, so that its experiment needs torch alone.
if TYPE_CHECKING:
    from explorer.labs.ddp.spec import SPEC

__getattr__ = on_first_use(__name__, {"spec": ("SPEC",)})

__all__ = ["MIN_STEPS", "PHASES", "SPEC", "TOLERANCE", "WORKER", "DdpResult", "WorldRun", "ddp_setup", "run_ddp"]
