"""Latency measurements with torch.utils.benchmark, as value objects with their spread.

A timing holds one measuring core for its duration (`CORES`, which the compile worker borrows over its pipe,
and the measurement pool holds for its processes: `use_measure_lock`): two timings never share a core, and
nothing else runs on it. The thread count is pinned and recorded with every figure.
"""

from __future__ import annotations

import platform
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import torch.utils.benchmark as benchmark
from torch.utils.benchmark.utils.common import TaskSpec, set_torch_threads

from explorer.core.fmt import ms_iqr
from explorer.core.machine import MEASURE_CORES, THREADS, on_core


class CoreLocks:
    """The measuring cores, each held by at most one timing at a time; a holder waits for a free one."""

    def __init__(self, cores: frozenset[int]) -> None:
        self._free = sorted(cores)
        self._all = tuple(self._free)
        self._cond = threading.Condition()

    def acquire(self) -> int:
        with self._cond:
            self._cond.wait_for(lambda: self._free)
            return self._free.pop(0)

    def release(self, core: int) -> None:
        with self._cond:
            self._free.append(core)
            self._free.sort()
            self._cond.notify_all()

    @contextmanager
    def hold(self) -> Iterator[int]:
        core = self.acquire()
        try:
            yield core
        finally:
            self.release(core)

    @contextmanager
    def every(self) -> Iterator[None]:
        """Hold every measuring core (work that takes the whole machine: no timing meanwhile)."""
        held = [self.acquire() for _ in self._all]
        try:
            yield
        finally:
            for core in held:
                self.release(core)

    @property
    def busy(self) -> int:
        with self._cond:
            return len(self._all) - len(self._free)


class Cores(Protocol):
    def hold(self) -> AbstractContextManager[int]: ...

    def every(self) -> AbstractContextManager[None]: ...


class HeldCore:
    """One core someone else holds for us (a measurement process's parent, a benchmark): timings just use it."""

    def __init__(self, core: int) -> None:
        self.core = core

    @contextmanager
    def hold(self) -> Iterator[int]:
        yield self.core

    @contextmanager
    def every(self) -> Iterator[None]:
        yield


CORES = CoreLocks(MEASURE_CORES)  # this process's own
_cores: Cores = CORES  # what `measure` holds a core of while it times


def use_cores(cores: Cores) -> None:
    """Time on `cores` instead of this process's own: in the compile worker, the app's, over the pipe; in a
    measurement process, the one core it is pinned to (the app holds it for the job)."""
    global _cores
    _cores = cores


def measuring_core() -> AbstractContextManager[int]:
    """One measuring core for a timing's duration (whichever `use_cores` set: this process's, or one held for it)."""
    return _cores.hold()


def exclusive() -> AbstractContextManager:
    """Every measuring core, for work that takes every core (a distributed run): no timing meanwhile."""
    return _cores.every()


@dataclass(frozen=True)
class Measurement:
    label: str
    median_ms: float
    iqr_ms: float
    min_ms: float
    max_ms: float
    runs: int  # timed blocks (each block's mean is one sample)
    calls_per_run: int
    threads: int
    start_s: float = 0.0  # time.monotonic() when the timing began and ended (system-wide on Linux: the
    end_s: float = 0.0  # compile worker's figures can be set against the app's)
    cores: tuple[int, ...] = ()  # the CPU cores the timing ran on
    node: str = ""  # the host they belong to (a Ray cluster has several)
    stopped: bool = False  # cut short at its time bound: fewer blocks than asked for

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def noisy(self) -> bool:
        """The spread rivals the figure (IQR over a quarter of the median): a ratio built on it is not to be read."""
        return self.iqr_ms > 0.25 * self.median_ms

    def spread(self) -> str:
        """What the median is of, and how wide it is: 'median of 10 runs, IQR 0.012 ms', and a warning when the
        spread rivals the figure."""
        said = f"median of {self.runs} runs, IQR {self.iqr_ms:.3f} ms"
        said += " (stopped at GE_MAX_RUN_S: fewer blocks than planned)" if self.stopped else ""
        return said + (": too noisy to read" if self.noisy else "")  # the IQR is over a quarter of the median

    def __str__(self) -> str:
        return f"{ms_iqr(self.median_ms, self.iqr_ms, 3)}, median of {self.runs} runs"


TARGET_BLOCKS = 10  # samples we aim for within the budget
MIN_BLOCKS = 3  # never fewer, even when one call is longer than the budget


def measure(label: str, fn: Callable[[], object], min_run_time: float, min_blocks: int = MIN_BLOCKS,
            deadline: float | None = None) -> Measurement:
    """Time `fn` in blocks for about `min_run_time` seconds, after one warm-up call; no block starts after
    `deadline` (time.monotonic()), whatever `min_blocks` asks (the one block a figure needs excepted).

    The block size comes from the warm-up call, so a 0.1 s budget still gives ~10 samples:
    `blocked_autorange` grows blocks by 10x (often leaving 2-4 samples plus a costly estimate), and
    the public `Timer.timeit` re-warms before every block, tripling the cost of one-call blocks.
    So blocks run through the Timer's own compiled inner loop (`_timeit`) under the pinned threads.
    """
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=THREADS, label=label)
    with _cores.hold() as core, on_core(core) as cores, set_torch_threads(THREADS):
        began = time.monotonic()
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        number = max(1, int(min_run_time / (TARGET_BLOCKS * max(once, 1e-7))))
        raw: list[float] = []
        stopped = False
        while sum(raw) < min_run_time or len(raw) < min_blocks:
            if raw and deadline is not None and time.monotonic() > deadline:
                stopped = True
                break
            raw.append(timer._timeit(number))
        ended = time.monotonic()
    spec = TaskSpec(stmt="fn()", setup="pass", label=label, num_threads=THREADS)
    m = benchmark.Measurement(number_per_run=number, raw_times=raw, task_spec=spec)
    times = [t * 1e3 for t in m.times]
    return Measurement(
        label=label,
        median_ms=m.median * 1e3,
        iqr_ms=m.iqr * 1e3,
        min_ms=min(times),
        max_ms=max(times),
        runs=len(times),
        calls_per_run=number,
        threads=THREADS,
        start_s=began,
        end_s=ended,
        cores=cores,
        node=platform.node(),
        stopped=stopped,
    )
