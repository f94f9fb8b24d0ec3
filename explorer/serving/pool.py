"""Timings in measurement processes, one pinned to each measuring core.

Why processes: a timing thread in the server process shares the GIL with every session's capture, layout and
figure, so load from other people bends its figures; a process of its own, alone on its core, times the model
with nothing else in the way. Why one per core: with more cores (`GE_MEASURE_WORKERS`), timings run in
parallel, each alone on its core. A worker is the compile worker's mechanism (explorer/workers/process.py):
started lazily, one job at a time, stopped and replaced if it hangs or dies."""

from __future__ import annotations

import contextlib
import json
import platform
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import torch

from explorer.core.limits import MAX_RUN_S
from explorer.core.machine import MEASURE_CORES
from explorer.core.progress import Progress
from explorer.eager import timing
from explorer.eager.capture import forward, train_loss, train_step, training
from explorer.eager.memory import MemoryPeaks, measure_peaks
from explorer.eager.timing import Measurement, measure
from explorer.sources.registry import build_model, make_config
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import Job, WorkerContext, WorkerFailure

MODELS_PER_WORKER = 4  # built models a measurement process keeps between jobs (least recently used dropped)


@dataclass(frozen=True)
class Timed:
    """A run's two timings, and where they were taken."""

    forward: Measurement
    train_step: Measurement
    node: str  # the host that measured (a Ray node may not be the app's)
    memory: MemoryPeaks | None = None  # the profiler's peaks, if asked for
    retried: str = ""  # why the first measurement process failed, when these come from a retry on a new one


@dataclass(frozen=True)
class TimingJob(Job[Timed]):
    """Time forward and train step of (model, config) on one input."""

    model: str
    config: tuple[tuple[str, Any], ...]
    ids: tuple[int, ...]
    forward_s: float  # timing budgets
    train_s: float
    min_blocks: int = timing.MIN_BLOCKS
    profile: bool = False  # also the profiler's memory peaks (after the timings: the profiler slows every op)

    @staticmethod
    def of(model: str, config: dict[str, Any], ids: torch.Tensor, forward_s: float, train_s: float,
           min_blocks: int = timing.MIN_BLOCKS, profile: bool = False) -> TimingJob:
        return TimingJob(model, tuple(sorted(config.items())), tuple(ids[0].tolist()), forward_s, train_s,
                         min_blocks, profile)

    def run(self, ctx: WorkerContext) -> Timed:
        models: OrderedDict[str, torch.nn.Module] = ctx.held if isinstance(ctx.held, OrderedDict) else OrderedDict()
        ctx.held = models
        key = json.dumps([self.model, self.config])
        if key not in models:
            models[key] = build_model(self.model, make_config(self.model, dict(self.config)))
            while len(models) > MODELS_PER_WORKER:
                models.popitem(last=False)
        models.move_to_end(key)
        model, ids = models[key], torch.tensor([self.ids])
        deadline = time.monotonic() + MAX_RUN_S  # the plan's estimate let it start; this bound stops it
        ctx.phase("timing forward")
        fw = measure("forward", lambda: forward(model, ids), self.forward_s, self.min_blocks, deadline)
        ctx.phase("timing the train step")
        with training(model):
            tr = measure("train step", lambda: train_step(model, ids), self.train_s, self.min_blocks, deadline)
        memory = None
        if self.profile and time.monotonic() < deadline:  # not in the server: its core is for every session's graphs
            ctx.phase("profiling memory")
            memory = measure_peaks(model, ids, lambda out: train_loss(out, model))
        return Timed(fw, tr, platform.node(), memory)


class MeasurePool:
    """One measurement process per measuring core; a job runs on whichever core is free (held in
    `timing.CORES`, which the compile worker's timings hold too, so nothing else times on it meanwhile)."""

    def __init__(self, cores: frozenset[int] = MEASURE_CORES, timeout_s: float = 3 * MAX_RUN_S) -> None:
        self._workers = {c: WorkerProcess(timeout_s, name=f"measurement (core {c})", core=c,
                                           advice="Try a shorter input or a smaller architecture.")
                         for c in sorted(cores)}

    def run(self, job: TimingJob) -> Iterator[Progress | Timed]:
        """The job's progress, then its timings. A measurement process that dies or hangs is replaced, and
        the job retried once on the new one (said in the progress); a second failure raises WorkerFailure."""
        with timing.CORES.hold() as core:
            worker = self._workers[core]
            try:
                yield from worker.run(job)
            except WorkerFailure as e:
                yield Progress(0.0, f"{e} Retrying once on a new measurement process")
                for item in worker.run(job):  # the figures say that they come from a retry, and why
                    yield replace(item, retried=f"Measured on a second try: {e}") if isinstance(item, Timed) else item

    def start(self) -> None:
        """Start every measurement process now (each imports torch: seconds), not on the first click; one that fails
        to start (the app stopping meanwhile) is started again by its first job."""
        for w in self._workers.values():
            with contextlib.suppress(WorkerFailure):
                w.start()

    def stop(self) -> None:
        for w in self._workers.values():
            w.stop()

    @property
    def size(self) -> int:
        return len(self._workers)
