"""One instrumented forward: the autograd graph and the module trace of a run.

The graph is read from the loss, and so are the bytes it saved: the storages that nodes the loss reaches keep
for backward. Timing and the profiler's memory peaks are measured on
separate, uninstrumented runs. A train step (and so the graph, read from its loss) runs in train mode: dropout
drawn, batch norm from the batch, as training runs it; an inference forward in eval mode, as every model is built.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from explorer.eager.graph import AutogradGraph, capture_graph
from explorer.eager.trace import ModuleTrace
from models.branch import Branch

LOSS_HOOK = "graph_explorer_loss"  # a model's own loss(output) -> scalar, where its file defines one


def train_loss(output: torch.Tensor, model: nn.Module | None = None) -> torch.Tensor:
    """The loss of a training step: the model's own (a user's file may define `loss(output)`), else logits
    (batch, classes) against class 0 (the weights are random anyway); any other output (a sequence of logits, a
    feature map) trains its sum."""
    own = getattr(model, LOSS_HOOK, None)
    if own is not None:
        return own(output)
    if output.dim() != 2:
        return output.float().sum()
    return F.cross_entropy(output, torch.zeros(output.shape[0], dtype=torch.long))


TRAIN_SEED = 0  # the dropout masks of a graph's train step: the same input draws the same graph


@contextlib.contextmanager
def training(model: nn.Module, seed: int | None = None) -> Iterator[nn.Module]:
    """`model` in train mode for the steps inside, its random draws seeded when `seed` is given; after, each module
    in its mode of before, with the running statistics of its norms (batch norm's) as they were: training steps run here
    to be drawn and timed, not to move what the next inference forward reads."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._NormBase) and m.track_running_stats]
    kept = [{k: v.clone() for k, v in m.named_buffers(recurse=False) if v is not None} for m in norms]
    modes = [(m, m.training) for m in model.modules()]  # each its own: a wrapper made in train mode holds an eval model
    with contextlib.ExitStack() as stack:
        if seed is not None:
            stack.enter_context(torch.random.fork_rng(devices=[]))
            torch.manual_seed(seed)
        model.train()
        try:
            yield model
        finally:
            for m, mode in modes:
                m.training = mode
            with torch.no_grad():
                for m, buffers in zip(norms, kept, strict=True):
                    for k, v in buffers.items():
                        getattr(m, k).copy_(v)


def train_step(model: nn.Module, ids: torch.Tensor) -> None:
    """One training step's forward and backward (inside `training(model)` to run it in train mode)."""
    model.zero_grad(set_to_none=True)
    train_loss(model(ids), model).backward()


def forward(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(ids)


@dataclass
class Capture:
    graph: AutogradGraph
    trace: dict[str, int]  # module path -> calls
    saved_bytes: int  # storages backward reads (reachable from the loss), each once, parameters excluded
    forward_s: float = 0.0  # wall time of the instrumented forward (an upper bound of one plain forward)
    branches: tuple[Branch, ...] = ()  # what the forward decided from the data, where the model says (early exit)

    @property
    def step_s(self) -> float:
        """An upper bound of one train step, from which a run's timing cost is estimated before it starts."""
        return STEP_BOUND * self.forward_s


STEP_BOUND = 3.0  # a plain train step over the capture's instrumented forward, at most: 1.46-2.41x measured per
# model at 100 tokens (bench/RESULTS-update.md)


def capture_run(model: nn.Module, ids: torch.Tensor, max_s: float | None = None) -> Capture:
    """The train step's graph is read (train mode, dropout seeded) and its forward timed; backward is not run (the
    server's core is shared by everyone's captures, and the graph frees itself when the loss goes). Past `max_s`
    seconds the forward stops at its next module call (PastBound, a message for the person)."""
    names = {id(p): n for n, p in model.named_parameters()}
    asks = hasattr(model, "branches")  # a model that can say what it decided from the data (models/branch.py)
    if asks:
        model.branches = []
    # the graph is read before the norms' statistics are put back: its nodes saved them, and a write would void that
    with training(model, TRAIN_SEED):
        try:
            start = time.perf_counter()
            with ModuleTrace(model, max_s) as trace:
                loss = train_loss(model(ids), model)
            forward_s = time.perf_counter() - start
            branches = tuple(model.branches) if asks else ()
        finally:
            if asks:
                model.branches = None  # the timed runs that follow record nothing
        graph = capture_graph(loss.grad_fn, trace, names)
    return Capture(graph=graph, trace=trace.counts(), saved_bytes=graph.saved_activation_bytes(),
                   forward_s=forward_s, branches=branches)
