"""The graph a forward built before it raised: what ran up to the failure, and the line it raised at.

A forward that raises leaves no loss to read the graph from. This pass runs it again (train mode, the same seeded
draws, so it raises at the same place) with a mode that keeps the autograd node of every operation's output
(`TorchFunctionMode`), and reads the graph those nodes reach, the nodes inside a composite operation included. The
last node made before the failure (the highest sequence number) is the one to look at; the line is the innermost
frame of the exception's traceback in the model's own files."""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from explorer.core.errors import InputError, one_line
from explorer.eager.capture import TRAIN_SEED, train_loss, training
from explorer.eager.graph import AutogradGraph, capture_graph
from explorer.eager.lines import innermost_line, model_files
from explorer.eager.trace import ModuleTrace, PastBound


@dataclass(frozen=True)
class PartialGraph:
    graph: AutogradGraph  # what the forward built before it raised (no nodes: it raised before any operation)
    error: str  # the exception, one line
    line: str  # "file:line" in the model's files where it raised, or "" (it raised in torch, called from no line)
    code: str  # that line's code
    last: int  # the node made last before the failure, or -1
    tokens: int  # the input's length

    def said(self) -> str:
        where = f" at {self.line} (`{self.code}`)" if self.line else ""
        return f"The forward raised{where}: {self.error}"


class ForwardRaised(InputError):
    """The model's forward raised on this input: said with where, and the graph it built up to there."""

    def __init__(self, partial: PartialGraph) -> None:
        super().__init__(partial.said())
        self.partial = partial

    def __reduce__(self) -> tuple[Any, ...]:
        return ForwardRaised, (self.partial,)


class _Made(TorchFunctionMode):
    """Keeps the autograd node of every tensor an operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[Any] = []

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.nodes += [t.grad_fn for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        return out


def record_partial(model: nn.Module, ids: torch.Tensor) -> PartialGraph | None:
    """The train step's forward of `model` on `ids` run again with its nodes kept: the graph up to where it raises,
    or None if it did not raise this time."""
    names = {id(p): n for n, p in model.named_parameters()}
    made = _Made()
    with training(model, TRAIN_SEED):
        try:
            with ModuleTrace(model) as trace, made:
                train_loss(model(ids), model)
        except PastBound:
            raise
        except Exception as e:  # the failure is the finding
            failure = e
        else:
            return None
    roots = list(dict.fromkeys(made.nodes))  # each once, in the order made
    graph = capture_graph(roots[-1], trace, names, *roots[:-1]) if roots else AutogradGraph([], [], 0)
    last = max((n for n in graph.nodes if not n.is_param), key=lambda n: n.seq, default=None)
    frames = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(failure.__traceback__)]
    line, code = innermost_line(frames, model_files(model))
    return PartialGraph(graph, one_line(failure), line, code, last.id if last else -1, ids.shape[1])
