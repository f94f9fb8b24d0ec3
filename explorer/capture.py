"""One instrumented forward + backward: the graph, the module trace and the memory of a run.

Everything is read from a single real training step: the graph before backward (saved tensors are
freed by it), the trace from module hooks, saved bytes from saved-tensor hooks, and peaks from the
profiler. Timing is done separately, without any of this instrumentation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from explorer.graph import AutogradGraph, capture_graph
from explorer.memory import MemoryProfile, SavedTensorTally, saved_hooks
from explorer.trace import ModuleTrace


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
    trace: dict[str, int]
    saved_bytes: int  # activation storages kept for backward, deduplicated, parameters excluded
    peak_train_bytes: int  # forward + backward, gradients included
    peak_grad_forward_bytes: int  # the forward of the training step (activations kept)
    peak_forward_bytes: int  # an inference forward (no_grad)


def capture_run(model: nn.Module, ids: torch.Tensor) -> Capture:
    names = {id(p): n for n, p in model.named_parameters()}
    tally = SavedTensorTally({p.untyped_storage().data_ptr() for p in model.parameters()})
    model.zero_grad(set_to_none=True)
    with MemoryProfile() as train_mem:
        with train_mem.phase("forward"), ModuleTrace(model) as trace, saved_hooks(tally):
            loss = train_loss(model(ids))
        graph = capture_graph(loss.grad_fn, trace, names)
        loss.backward()
    with MemoryProfile() as infer_mem:
        forward(model, ids)
    return Capture(
        graph=graph,
        trace=trace.counts(),
        saved_bytes=tally.bytes,
        peak_train_bytes=train_mem.peak(),
        peak_grad_forward_bytes=train_mem.peak("forward"),
        peak_forward_bytes=infer_mem.peak(),
    )
