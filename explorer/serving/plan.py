"""How long a run will keep a measuring core, estimated before it starts, and what to do about it.

The estimate comes from the run's own graph capture, which is one instrumented forward + backward (an upper
bound of one call): a timing is a warm-up call, then blocks until the budget is spent and at least
`MIN_BLOCKS` ran. A run past `GE_MAX_RUN_S` is shortened (one block per figure, no profiler pass) and, if even
that is too long, not timed at all; the status says which, with the estimate."""

from __future__ import annotations

from dataclasses import dataclass, replace

from explorer.core.limits import FORWARD_BUDGET_S, MAX_RUN_S, TRAIN_BUDGET_S
from explorer.eager.capture import Capture
from explorer.eager.timing import MIN_BLOCKS

PROFILER_COST = 3.0  # a profiled train step over a plain one, on this app's models (it records every allocation)


@dataclass(frozen=True)
class Plan:
    forward_s: float  # timing budgets
    train_s: float
    min_blocks: int
    profile: bool  # run the profiler's memory pass
    estimate_s: float  # seconds on the measuring core
    timed: bool = True
    note: str | None = None

    @property
    def shortened(self) -> bool:
        return self.min_blocks < MIN_BLOCKS

    def scaled(self, budget_scale: float) -> Plan:
        """The same plan with its budgets cut (the queue's load factor)."""
        return replace(self, forward_s=self.forward_s * budget_scale, train_s=self.train_s * budget_scale)


def _cost(forward_s: float, step_s: float, fw_budget: float, tr_budget: float, blocks: int) -> float:
    return forward_s + max(fw_budget, blocks * forward_s) + step_s + max(tr_budget, blocks * step_s)


def plan(capture: Capture, max_s: float = MAX_RUN_S) -> Plan:
    f, t = capture.forward_s, capture.step_s
    fw, tr = FORWARD_BUDGET_S, TRAIN_BUDGET_S
    full = _cost(f, t, fw, tr, MIN_BLOCKS)
    if full <= max_s:
        return Plan(fw, tr, MIN_BLOCKS, PROFILER_COST * t <= max_s, full)
    short = _cost(f, t, 0.0, 0.0, 1)
    said = (f"one train step of this run takes up to {t:.1f} s (its graph capture), so a full timing would keep the "
            f"measuring core about {full:.0f} s, over GE_MAX_RUN_S = {max_s:g} s")
    if short <= max_s:
        return Plan(0.0, 0.0, 1, False, short,
                    note=f"Shortened: {said}; each figure is one block after a warm-up (no spread) and memory was "
                         "not profiled.")
    return Plan(0.0, 0.0, 1, False, short, timed=False,
                note=f"Not timed: {said}, and even one block per figure about {short:.0f} s. The graph and counts "
                     "above are measured; for timings, try a shorter input or a smaller architecture.")
