"""Latency measurements with torch.utils.benchmark, as value objects with their spread.

Measurements run one at a time across the whole app (`MEASURE_LOCK`, which the compile worker borrows over
its pipe: `use_measure_lock`): on 2 cores, two timings at once corrupt each other. The thread count is
pinned and recorded with every figure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any

import torch.utils.benchmark as benchmark
from torch.utils.benchmark.utils.common import TaskSpec, set_torch_threads

from explorer.core.fmt import ms_iqr
from explorer.core.machine import THREADS, on_measure_cores

MEASURE_LOCK = threading.Lock()  # this process's own
_lock: AbstractContextManager = MEASURE_LOCK  # what `measure` holds while it times


def use_measure_lock(lock: AbstractContextManager) -> None:
    """Time under `lock` instead of this process's own (in the compile worker: the app's, over the pipe)."""
    global _lock
    _lock = lock


def exclusive() -> AbstractContextManager:
    """The lock `measure` holds, for work that takes every core (a distributed run): no timing meanwhile."""
    return _lock


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def noisy(self) -> bool:
        """The spread rivals the figure (IQR over a quarter of the median): a ratio built on it is not to be read."""
        return self.iqr_ms > 0.25 * self.median_ms

    def spread(self) -> str:
        """What the median is of, and how wide it is: 'median of 10 runs, IQR 0.012 ms'."""
        return f"median of {self.runs} runs, IQR {self.iqr_ms:.3f} ms"

    def __str__(self) -> str:
        return f"{ms_iqr(self.median_ms, self.iqr_ms, 3)}, median of {self.runs} runs"


TARGET_BLOCKS = 10  # samples we aim for within the budget
MIN_BLOCKS = 3  # never fewer, even when one call is longer than the budget


def measure(label: str, fn: Callable[[], object], min_run_time: float) -> Measurement:
    """Time `fn` in blocks for about `min_run_time` seconds, after one warm-up call.

    The block size comes from the warm-up call, so a 0.1 s budget still gives ~10 samples:
    `blocked_autorange` grows blocks by 10x (often leaving 2-4 samples plus a costly estimate), and
    the public `Timer.timeit` re-warms before every block, tripling the cost of one-call blocks.
    So blocks run through the Timer's own compiled inner loop (`_timeit`) under the pinned threads.
    """
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=THREADS, label=label)
    with _lock, on_measure_cores() as cores, set_torch_threads(THREADS):
        began = time.monotonic()
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        number = max(1, int(min_run_time / (TARGET_BLOCKS * max(once, 1e-7))))
        raw: list[float] = []
        while sum(raw) < min_run_time or len(raw) < MIN_BLOCKS:
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
    )
