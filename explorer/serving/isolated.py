"""A capture (and the lines-that-ran pass) in a worker process, for a model whose code the operator brought (a
file given to `app.py --model`): its forward may hang, allocate without bound or crash, and the server must keep
serving. The compile worker's timeout and replacement apply; the graph comes back pickled (a few kB)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from explorer.core.errors import InputError
from explorer.core.limits import MAX_RUN_S
from explorer.eager.capture import capture_run
from explorer.eager.costs import Costs, profile_costs
from explorer.eager.lines import LinesRan, record_lines
from explorer.eager.memory import param_bytes
from explorer.eager.partial import ForwardRaised, PartialGraph, record_partial
from explorer.serving.plan import check_capture
from explorer.serving.shared import Fixed
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Job, WorkerContext


@dataclass(frozen=True)
class CaptureJob(Job[Fixed]):
    model: str
    config: dict
    ids: list[int]

    def run(self, ctx: WorkerContext) -> Fixed | PartialGraph:
        ctx.phase("building the model")
        model = build_model(self.model, make_config(self.model, self.config))
        ctx.phase("capturing the graph")
        try:
            return captured_here(model, "", torch.tensor([self.ids], dtype=torch.long), probe=False)
        except ForwardRaised as e:  # the graph up to the failure goes back whole (a worker's error is a line)
            return e.partial


def captured_here(model: nn.Module, arch: str, ids: torch.Tensor, probe: bool = True) -> Fixed:
    """The capture of `ids`, in this process, refused first if its estimate is over the bound (`probe`); a forward
    that raises, on the probe or on the input, raises ForwardRaised with the graph it built up to there."""
    try:
        if probe:
            check_capture(arch, model, ids)
        return Fixed(capture_run(model, ids, MAX_RUN_S), sum(p.numel() for p in model.parameters()),
                     param_bytes(model))
    except InputError:
        raise
    except Exception:  # the model's own failure: recorded again, with the nodes kept
        partial = record_partial(model, ids)
        if partial is None:  # it did not raise again (a model that draws differently each call)
            raise
        raise ForwardRaised(partial) from None


@dataclass(frozen=True)
class LinesJob(Job[LinesRan]):
    model: str
    config: dict
    ids: list[int]
    ops: list[str] | None  # the graph on screen's operations node by node, to check the pass's (None: none drawn)

    def run(self, ctx: WorkerContext) -> LinesRan:
        ctx.phase("recording the lines that ran")
        model = build_model(self.model, make_config(self.model, self.config))
        return record_lines(model, torch.tensor([self.ids], dtype=torch.long), self.ops)


@dataclass(frozen=True)
class CostsJob(Job[Costs]):
    model: str
    config: dict
    ids: list[int]
    ops: list[str]  # the graph on screen's operations node by node, to check the pass's against
    repeats: int

    def run(self, ctx: WorkerContext) -> Costs:
        ctx.phase("profiling the train step node by node")
        model = build_model(self.model, make_config(self.model, self.config))
        return profile_costs(model, torch.tensor([self.ids], dtype=torch.long), self.ops, self.repeats)
