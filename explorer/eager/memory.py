"""Exact CPU memory of a run from torch.profiler's allocation events.

On CPU the profiler records every allocation and free (`[memory]` events with signed byte counts);
their running sum, in time order, is the live tensor memory above what existed before the run,
and its maximum is the peak. tracemalloc and RSS do not see tensor memory reliably.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from explorer.eager.capture import training


class MemoryProfile:
    """Profile memory events inside a `with`; mark phases with `phase(name)`."""

    def __init__(self) -> None:
        self._prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        self._events: list[tuple[int, int]] = []
        self._phase: dict[str, tuple[int, int]] = {}  # name -> (start, end) ns

    def __enter__(self) -> MemoryProfile:
        self._prof.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._prof.__exit__(*exc)
        try:
            if exc[0] is None:
                for e in self._prof.profiler.kineto_results.events():
                    if e.name() == "[memory]":
                        self._events.append((e.start_ns(), e.nbytes()))
                    elif e.name().startswith("ge."):
                        self._phase[e.name()[3:]] = (e.start_ns(), e.end_ns())
        finally:
            # The profiler keeps every event it recorded (tens of MB for a long run) in reference cycles that only
            # the cycle collector frees: a measurement process grew by ~33 MB per run until a collection. A full
            # collection per profile cost the measuring core more than the profile itself (bench/RESULTS-gc.md):
            # the cycles' link to the events is cut instead, so the events go at once; only the memory events are
            # kept.
            inner = self._prof.profiler
            if inner is not None:
                inner.kineto_results = None
            self._prof = None

    def phase(self, name: str) -> record_function:
        return record_function("ge." + name)

    def peak(self, until_phase: str | None = None) -> int:
        """Peak live bytes from the start, to the end of `until_phase` or of the whole profile."""
        return live_peak(self._events, None, self._phase[until_phase][1] if until_phase else None)

    def peak_in(self, phase: str) -> int:
        """Peak live bytes during `phase`, above what was live when it began (as if profiled alone)."""
        return live_peak(self._events, *self._phase[phase])


def live_peak(events: list[tuple[int, int]], from_ns: int | None = None, until_ns: int | None = None) -> int:
    """The maximum of the running sum of (time, signed bytes) allocation events between `from_ns` and
    `until_ns`, above what was live at `from_ns`. On a tie an allocation counts before a free: the other order
    would understate the peak."""
    live = peak = base = 0
    for start, nbytes in sorted(events, key=lambda e: (e[0], -e[1])):
        if until_ns is not None and start > until_ns:
            break
        live += nbytes
        if from_ns is not None and start < from_ns:
            base = live
            continue
        peak = max(peak, live - base)
    return peak


@dataclass(frozen=True)
class MemoryPeaks:
    """Peak live tensor bytes above what existed before each run."""

    forward: int  # an inference forward (no_grad)
    grad_forward: int  # the forward of a training step, activations kept for backward
    train: int  # forward + backward of a training step, gradients included


def measure_peaks(model: torch.nn.Module, ids: torch.Tensor, loss_fn: Callable) -> MemoryPeaks:
    """A train step (in train mode), then an inference forward, in one profile (stopping a profiler costs tens of
    ms)."""
    model.zero_grad(set_to_none=True)
    with MemoryProfile() as prof:
        with prof.phase("train"), training(model):
            with prof.phase("forward"):
                loss = loss_fn(model(ids))
            loss.backward()
        del loss
        with prof.phase("infer"), torch.no_grad():
            model(ids)
    return MemoryPeaks(forward=prof.peak_in("infer"), grad_forward=prof.peak("forward"), train=prof.peak("train"))


def param_bytes(model: torch.nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


_warm = False


def warm_profiler() -> None:
    """The profiler's first use in a process is slow (a one-time set-up): pay it before the first figure."""
    global _warm
    if not _warm:
        with MemoryProfile():
            torch.ones(1) + 1
        _warm = True
