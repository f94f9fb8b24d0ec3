"""One instrumented forward + backward: the autograd graph and the module trace of a run.

The graph is read before backward (backward frees the saved tensors), and so are the bytes it saved:
the storages that nodes the loss reaches keep for backward. Timing and the profiler's memory peaks are measured on
separate, uninstrumented runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from explorer.eager.graph import AutogradGraph, capture_graph
from explorer.eager.trace import ModuleTrace


def train_loss(logits: torch.Tensor) -> torch.Tensor:
    """The loss of a training step: cross-entropy against class 0 (the weights are random anyway)."""
    return F.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long))


def train_step(model: nn.Module, ids: torch.Tensor) -> None:
    model.zero_grad(set_to_none=True)
    train_loss(model(ids)).backward()


def forward(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(ids)


@dataclass
class Capture:
    graph: AutogradGraph
    trace: dict[str, int]  # module path -> calls
    saved_bytes: int  # storages backward reads (reachable from the loss), each once, parameters excluded
    forward_s: float = 0.0  # wall time of the instrumented forward, and of forward + backward: upper bounds of
    step_s: float = 0.0  # one uninstrumented call, from which a run's timing cost is estimated before it starts


def capture_run(model: nn.Module, ids: torch.Tensor) -> Capture:
    names = {id(p): n for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    with ModuleTrace(model) as trace:
        loss = train_loss(model(ids))
    forward_s = time.perf_counter() - start
    graph = capture_graph(loss.grad_fn, trace, names)
    start_backward = time.perf_counter()
    loss.backward()
    step_s = forward_s + time.perf_counter() - start_backward
    return Capture(graph=graph, trace=trace.counts(), saved_bytes=graph.saved_activation_bytes(),
                   forward_s=forward_s, step_s=step_s)
