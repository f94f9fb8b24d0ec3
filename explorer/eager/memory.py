"""Exact CPU memory of a run from torch.profiler's allocation events, and bytes saved for backward.

On CPU the profiler records every allocation and free (`[memory]` events with signed byte counts);
their running sum, in time order, is the live tensor memory above what existed before the run,
and its maximum is the peak. tracemalloc and RSS do not see tensor memory reliably.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.autograd.graph import saved_tensors_hooks
from torch.profiler import ProfilerActivity, profile, record_function


@dataclass
class SavedTensorTally:
    """Storages saved for backward, each counted once; parameters excluded."""

    param_ptrs: set[int]
    storages: dict[int, int] = field(default_factory=dict)

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in self.param_ptrs:
            self.storages[ptr] = storage.nbytes()
        return t

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())


class MemoryProfile:
    """Profile memory events inside a `with`; mark phases with `phase(name)`."""

    def __init__(self) -> None:
        self._prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        self._events: list[tuple[int, int]] = []
        self._phase_end: dict[str, int] = {}

    def __enter__(self) -> MemoryProfile:
        self._prof.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._prof.__exit__(*exc)
        if exc[0] is not None:
            return
        for e in self._prof.profiler.kineto_results.events():
            if e.name() == "[memory]":
                self._events.append((e.start_ns(), e.nbytes()))
            elif e.name().startswith("ge."):
                self._phase_end[e.name()[3:]] = e.end_ns()
        self._events.sort()

    def phase(self, name: str) -> record_function:
        return record_function("ge." + name)

    def peak(self, until_phase: str | None = None) -> int:
        """Peak live bytes from the start, to the end of `until_phase` or of the whole profile."""
        limit = self._phase_end[until_phase] if until_phase else None
        live = peak = 0
        for start, nbytes in self._events:
            if limit is not None and start > limit:
                break
            live += nbytes
            peak = max(peak, live)
        return peak


@dataclass(frozen=True)
class MemoryPeaks:
    """Peak live tensor bytes above what existed before each run."""

    forward: int  # an inference forward (no_grad)
    grad_forward: int  # the forward of a training step, activations kept for backward
    train: int  # forward + backward of a training step, gradients included


def measure_peaks(model: torch.nn.Module, ids: torch.Tensor, loss_fn: Callable) -> MemoryPeaks:
    model.zero_grad(set_to_none=True)
    with MemoryProfile() as train:
        with train.phase("forward"):
            loss = loss_fn(model(ids))
        loss.backward()
    del loss
    with MemoryProfile() as infer, torch.no_grad():
        model(ids)
    return MemoryPeaks(forward=infer.peak(), grad_forward=train.peak("forward"), train=train.peak())


def param_bytes(model: torch.nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def saved_hooks(tally: SavedTensorTally) -> saved_tensors_hooks:
    return saved_tensors_hooks(tally.pack, lambda t: t)


_warm = False


def warm_profiler() -> None:
    """The profiler's first use in a process costs ~1.5 s; pay it before the first figure."""
    global _warm
    if not _warm:
        with MemoryProfile():
            torch.ones(1) + 1
        _warm = True
