"""The code worker's jobs: build the edited model and read its graph on the Playground's input (or say in the
editor's terms where the edit broke), then time its forward: two jobs, so that the graph is drawn before the
timing, which the worker does on the model the first job left there."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from explorer.eager.branches import Across, across, forks_of
from explorer.eager.capture import capture_run, forward
from explorer.eager.costs import Costs, profile_costs, repeats_within
from explorer.eager.lines import LinesRan, record_lines
from explorer.eager.memory import param_bytes
from explorer.eager.timing import Measurement, measure
from explorer.serving.shared import Fixed
from explorer.sources.edited import CodeError, build, checked_output, error_of, load
from explorer.workers.protocol import Job, WorkerContext

FORWARD_BUDGET_S = 0.3  # the edited forward's timing: a dozen samples of a zoo model at its default input


@dataclass(frozen=True)
class CodeRun:
    """What the edited model did on the input: its graph (and counts), and its forward's timing once measured."""

    fixed: Fixed
    forward: Measurement | None = None
    lines: LinesRan | None = None  # the lines of the edit (and the files it uses) that ran, and the nodes each made
    branches: tuple[Across, ...] = ()  # which way each if/for/while of them went (read here: the edit is here)


@dataclass(frozen=True)
class _Built:
    """What the capture job leaves in the worker for the timing job: the model and its input, by source."""

    key: tuple[str, tuple[int, ...]]
    model: nn.Module
    ids: torch.Tensor


@dataclass(frozen=True)
class CodeJob(Job[CodeRun | CodeError]):
    model: str  # the zoo model whose file was edited
    source: str
    values: Mapping[str, Any] = field(default_factory=dict)  # its knobs, as the Playground has them
    ids: tuple[int, ...] = ()

    def run(self, ctx: WorkerContext) -> CodeRun | CodeError:
        try:
            ctx.phase("building the edited model")
            model = build(load(self.source, self.model), self.model, self.values)
            ids = torch.tensor([self.ids], dtype=torch.long)
            ctx.phase("running the edited forward")
            checked_output(forward(model, ids))
            capture = capture_run(model, ids)
        except Exception as e:  # the visitor's code: any exception is an answer, in the editor's terms
            ctx.held = None
            return error_of(e)
        ctx.held = _Built((self.source, self.ids), model, ids)
        ctx.phase("recording the lines that ran")
        lines = record_lines(model, ids, [n.op for n in capture.graph.nodes])  # its own pass: nothing timed
        return CodeRun(Fixed(capture, sum(p.numel() for p in model.parameters()), param_bytes(model)), lines=lines,
                       branches=tuple(across(forks_of(lines), lines, [])))


@dataclass(frozen=True)
class CodeTimingJob(Job[Measurement | CodeError | None]):
    """The forward of the model the last CodeJob built from `source` on `ids`, timed; None if the worker no longer
    holds it (replaced meanwhile)."""

    source: str
    ids: tuple[int, ...]

    def run(self, ctx: WorkerContext) -> Measurement | CodeError | None:
        built = ctx.held
        if not isinstance(built, _Built) or built.key != (self.source, self.ids):
            return None
        ctx.phase("timing the edited forward")
        try:
            return measure("edited forward", lambda: forward(built.model, built.ids), FORWARD_BUDGET_S)
        except Exception as e:  # a forward that misbehaves only when repeated (state kept between calls)
            return error_of(e)


@dataclass(frozen=True)
class CodeCostsJob(Job[Costs | CodeError]):
    """Where the train step of the edit `source` on `ids` spent its time, node by node (the profiler,
    explorer/eager/costs.py), as many repeats as fit in half the worker's limit: on the model the last CodeJob left
    in the worker, or built again from the source (another job ran meanwhile)."""

    model: str
    source: str
    values: Mapping[str, Any]
    ids: tuple[int, ...]
    ops: tuple[str, ...]  # the edit's graph's operations node by node, to check the pass's against
    step_s: float  # its train step, unprofiled, as the capture took it
    budget_s: float  # the worker's time limit for one job

    def run(self, ctx: WorkerContext) -> Costs | CodeError:
        repeats = repeats_within(self.step_s, self.budget_s / 2, "half of GE_CODE_TIMEOUT_S")
        built = ctx.held
        try:
            if isinstance(built, _Built) and built.key == (self.source, self.ids):
                model, ids = built.model, built.ids
            else:
                ctx.phase("building the edited model")
                model = build(load(self.source, self.model), self.model, self.values)
                ids = torch.tensor([self.ids], dtype=torch.long)
            ctx.phase("profiling the edited train step node by node")
            return profile_costs(model, ids, list(self.ops), repeats)
        except Exception as e:  # the visitor's code, run again: any exception is an answer
            return error_of(e)
