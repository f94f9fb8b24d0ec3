"""The batching lab: sentences of many lengths in one batch, run with every strategy (pad, bucket, pack,
nested, loop), checked against the loop, timed eagerly here and compiled in the worker."""

# The lab's public surface: what the registry, the claims, the Code tab and the API use (tests/test_architecture.py
# keeps every other module of the engine out of the lab's own modules).
from typing import TYPE_CHECKING

from explorer.labs.batching.lab import iter_lab
from explorer.labs.batching.results import LabResult
from explorer.labs.batching.strategies import STRATEGIES, prepare
from explorer.labs.batching.timed import no_grad
from explorer.labs.contract import on_first_use

# Its spec and view draw its figures: imported on first use, so that its experiment needs torch alone.
if TYPE_CHECKING:
    from explorer.labs.batching.figures import lab_lengths_figure, lab_time_figure, lab_waste_figure
    from explorer.labs.batching.spec import SPEC

__getattr__ = on_first_use(__name__, {"figures": ("lab_lengths_figure", "lab_time_figure", "lab_waste_figure"),
                                       "spec": ("SPEC",)})

__all__ = [
    "SPEC", "STRATEGIES", "LabResult", "iter_lab", "lab_lengths_figure", "lab_time_figure", "lab_waste_figure",
    "no_grad", "prepare",
]
