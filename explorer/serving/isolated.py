"""A capture (and the lines-that-ran pass) in a worker process, for a model whose code the operator brought (a
file given to `app.py --model`): its forward may hang, allocate without bound or crash, and the server must keep
serving. The compile worker's timeout and replacement apply; the graph comes back pickled (a few kB)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from explorer.core.limits import MAX_RUN_S
from explorer.eager.capture import capture_run
from explorer.eager.lines import LinesRan, record_lines
from explorer.eager.memory import param_bytes
from explorer.serving.shared import Fixed
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Job, WorkerContext


@dataclass(frozen=True)
class CaptureJob(Job[Fixed]):
    model: str
    config: dict
    ids: list[int]

    def run(self, ctx: WorkerContext) -> Fixed:
        ctx.phase("building the model")
        model = build_model(self.model, make_config(self.model, self.config))
        ctx.phase("capturing the graph")
        capture = capture_run(model, torch.tensor([self.ids], dtype=torch.long), MAX_RUN_S)
        return Fixed(capture, sum(p.numel() for p in model.parameters()), param_bytes(model))


@dataclass(frozen=True)
class LinesJob(Job[LinesRan]):
    model: str
    config: dict
    ids: list[int]
    ops: list[str]  # the capture's graph's operations, node by node: the pass checks it drew the same graph

    def run(self, ctx: WorkerContext) -> LinesRan:
        ctx.phase("recording the lines that ran")
        model = build_model(self.model, make_config(self.model, self.config))
        return record_lines(model, torch.tensor([self.ids], dtype=torch.long), self.ops)
