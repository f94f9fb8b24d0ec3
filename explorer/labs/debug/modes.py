"""One training step of a bugged model in one execution mode, and what the user sees: did it fail, after how
long (compile time included), with which traceback. Compiled modes run in the compile worker (`DebugJob`)."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch._dynamo as dynamo
from torch import nn

from explorer.core.paths import relative
from explorer.eager.capture import train_loss
from explorer.labs.debug.failure import Failure
from explorer.sources.edited import model_of
from explorer.workers.protocol import Job, WorkerContext
from models.bugs import BUGS

TRACE_TOKENS = 8  # the traced mode freezes the model at this length (shorter than the shape bug's threshold)
MODES = ("eager", "compiled (eager)", "compiled (aot_eager)", "compiled (inductor)", "traced")


@dataclass(frozen=True)
class ModeOutcome:
    mode: str
    failed: bool
    seconds: float | None  # from the call to the exception (or to the end of the step); None: not measured (the
    # worker running the mode timed out or died: its message is the failure)
    failure: Failure | None
    loss: float | None  # the step's loss when it did not fail (NaN shows here)
    grad_finite: bool | None  # every gradient finite after the step
    note: str = ""  # what the mode did to the model that a row must say (the trace's frozen decisions)

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "failed": self.failed, "seconds": self.seconds, "loss": self.loss,
                "grad_finite": self.grad_finite, "failure": self.failure.as_dict() if self.failure else None,
                "note": self.note}


def bugged(model_name: str, config: dict, bug: str, source: str = "") -> nn.Module:
    """The model with `bug` injected (`source`: its file as edited in the Code tab; in the code worker only)."""
    model = model_of(model_name, config, source)
    BUGS[bug].inject(model)
    return model


def step(model: nn.Module, run: nn.Module | Any, ids: torch.Tensor, mode: str) -> ModeOutcome:
    """A forward, the loss and a backward through `run` (the model itself, compiled or traced)."""
    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    try:
        loss = train_loss(run(ids), model)
        loss.backward()
    except Exception as e:  # the bug surfacing is the outcome we report
        return ModeOutcome(mode, True, time.perf_counter() - start, Failure.of(e), None, None)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    finite = all(bool(torch.isfinite(g).all()) for g in grads)
    return ModeOutcome(mode, False, time.perf_counter() - start, None, float(loss), finite)


def eager(model_name: str, config: dict, bug: str, ids: torch.Tensor, source: str = "") -> ModeOutcome:
    model = bugged(model_name, config, bug, source)
    return step(model, model, ids, "eager")


def traced(model_name: str, config: dict, bug: str, ids: torch.Tensor, source: str = "") -> ModeOutcome:
    """Trace the bugged model at TRACE_TOKENS tokens (as a deployment would), then run the user's input."""
    model = bugged(model_name, config, bug, source)
    example = torch.full((1, TRACE_TOKENS), ord("a"), dtype=torch.long)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            frozen = torch.jit.trace(model, (example,), check_trace=False)
        except Exception as e:
            return ModeOutcome("traced", True, time.perf_counter() - start, Failure.of(e), None, None)
    frozen_at = sorted({f"{relative(w.filename)}:{w.lineno}" for w in caught
                        if issubclass(w.category, torch.jit.TracerWarning)})
    note = (f"traced at {TRACE_TOKENS} tokens: the trace froze that run's Python decisions"
            + (f" (TracerWarning at {', '.join(frozen_at)})" if frozen_at else " (no TracerWarning said so)"))
    return replace(step(model, frozen, ids, "traced"), note=note)


@dataclass(frozen=True)
class DebugJob(Job[ModeOutcome]):
    """A compiled mode, in the compile worker (a compile can hang or crash); dynamo starts clean."""

    model: str
    config: dict
    bug: str
    tokens: list[int]
    backend: str
    source: str = ""  # the model's file as edited in the Code tab (run in the confined code worker only)

    def run(self, ctx: WorkerContext) -> ModeOutcome:
        ctx.held = None
        dynamo.reset()
        model = bugged(self.model, self.config, self.bug, self.source)
        ctx.phase(f"compiling the bugged model with backend {self.backend}")
        compiled = torch.compile(model, backend=self.backend)
        try:
            return step(model, compiled, torch.tensor([self.tokens], dtype=torch.long),
                        f"compiled ({self.backend})")
        finally:
            dynamo.reset()
