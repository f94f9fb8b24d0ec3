"""The code worker's one job: build the edited model, read its graph on the Playground's input and time its
forward, or say in the editor's terms where the edit broke."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from explorer.code.edited import CodeError, build, checked_output, error_of, load
from explorer.compile.protocol import Job, WorkerContext
from explorer.eager.capture import capture_run, forward
from explorer.eager.memory import param_bytes
from explorer.eager.timing import Measurement, measure
from explorer.serving.shared import Fixed

FORWARD_BUDGET_S = 0.3  # the edited forward's timing: a dozen samples of a zoo model at its default input


@dataclass(frozen=True)
class CodeRun:
    """What the edited model did on the input: its graph (and counts), and its forward's timing."""

    fixed: Fixed
    forward: Measurement


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
            ctx.phase("timing the edited forward")
            timed = measure("edited forward", lambda: forward(model, ids), FORWARD_BUDGET_S)
        except Exception as e:  # the visitor's code: any exception is an answer, in the editor's terms
            return error_of(e)
        return CodeRun(Fixed(capture, sum(p.numel() for p in model.parameters()), param_bytes(model)), timed)
