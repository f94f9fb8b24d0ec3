"""How long a run will take, estimated before it starts, and what to do about it.

Before the graph capture: one train step on a short prefix of the input (once per architecture) gives the
seconds per token, and an input whose capture would pass `GE_MAX_RUN_S` is refused with the estimate. Before
the timings: the capture itself is one instrumented forward + backward (an upper bound of one call), and a
timing is a warm-up call, then blocks until the budget is spent and at least `MIN_BLOCKS` ran. A run past
`GE_MAX_RUN_S` is shortened (one block per figure, no profiler pass) and, if even that is too long, not timed
at all; the status says which, with the estimate."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import torch
from torch import nn

from explorer.core.errors import InputError
from explorer.core.limits import FORWARD_BUDGET_S, MAX_RUN_S, TRAIN_BUDGET_S
from explorer.eager.capture import Capture, train_step, training
from explorer.eager.timing import MIN_BLOCKS
from explorer.serving.queueing import Turn

PROBE_TOKENS = 32  # the prefix a new architecture's cost per token is measured on
PROBE_REPEATS = 3  # the fastest of a few probes: one stalled probe (seen: 0.85 s of a 0.03 s step, two torch
# threads beside another busy process) would refuse every long input of its architecture for the process's life
CAPTURE_COST = 1.5  # a capture (an instrumented forward, the graph read; no backward) over a plain train step, at
# most: 0.75-1.22x measured per model at 100 tokens (bench/RESULTS-update.md)
PROFILER_COST = 12.0  # a profiled train step over a plain one, at most: 3.04-9.58x measured (bench/RESULTS-update.md)


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

    def in_turn(self, turn: Turn) -> Plan:
        """The plan as its turn in the measurement queue allows: budgets cut under load, and no new memory profile
        with GE_PROFILE_QUEUE runs waiting (it keeps the measuring core up to PROFILER_COST train steps, several
        times the cut timings, while everyone behind waits; an input profiled once keeps its peaks for all)."""
        return replace(self.scaled(turn.budget_scale), profile=self.profile and turn.profiles)


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


_per_token: dict[str, float] = {}  # architecture (model and config) -> seconds of one train step per token


def _timed_step(model: nn.Module, ids: torch.Tensor) -> float:
    start = time.perf_counter()
    with training(model):
        train_step(model, ids)
    return time.perf_counter() - start


def check_capture(arch: str, model: nn.Module, ids: torch.Tensor, max_s: float = MAX_RUN_S) -> None:
    """Refuse an input whose graph capture would take longer than `max_s`, from a short probe of the model
    (measured once per architecture; the probe's own cost is a fraction of a long input's)."""
    tokens = ids.shape[1]
    if tokens <= PROBE_TOKENS:
        return
    if arch not in _per_token:
        probe = ids[:, :PROBE_TOKENS]
        _timed_step(model, probe)  # warm-up: a new model's first call pays one-time costs
        _per_token[arch] = min(_timed_step(model, probe) for _ in range(PROBE_REPEATS)) / PROBE_TOKENS
    estimate = CAPTURE_COST * _per_token[arch] * tokens
    if estimate > max_s:
        raise InputError(
            f"This run would take about {estimate:.0f} s to capture ({tokens} tokens at "
            f"{1e3 * _per_token[arch]:.0f} ms per token for one train step of this architecture, measured on a "
            f"{PROBE_TOKENS}-token prefix), over GE_MAX_RUN_S = {max_s:g} s: every other session would wait "
            f"behind it. Try fewer than {int(max_s / (CAPTURE_COST * _per_token[arch]))} tokens or a smaller "
            "architecture.")
