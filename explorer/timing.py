"""Latency measurements with torch.utils.benchmark, as value objects with their spread.

Measurements run one at a time across the whole process (`MEASURE_LOCK`): on 2 cores, two timings
at once corrupt each other. The thread count is pinned and recorded with every figure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch.utils.benchmark as benchmark

from explorer.machine import THREADS

MEASURE_LOCK = threading.Lock()


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.median_ms:.2f} ms (IQR {self.iqr_ms:.2f}, {self.runs} runs x {self.calls_per_run})"


TARGET_BLOCKS = 10  # samples we aim for within the budget
MIN_BLOCKS = 3  # never fewer, even when one call is longer than the budget


def measure(label: str, fn: Callable[[], object], min_run_time: float) -> Measurement:
    """Time `fn` in blocks for about `min_run_time` seconds, after a warm-up call.

    Like `Timer.blocked_autorange`, but the block size comes from the warm-up call, so a short
    budget still gives ~10 samples (blocked_autorange's x10 block sizing often leaves 3-4).
    """
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=THREADS, label=label)
    with MEASURE_LOCK:
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        number = max(1, int(min_run_time / (TARGET_BLOCKS * max(once, 1e-7))))
        blocks, spent = [], 0.0
        while spent < min_run_time or len(blocks) < MIN_BLOCKS:
            block = timer.timeit(number)
            blocks.append(block)
            spent += block.mean * number
    m = benchmark.Measurement.merge(blocks)[0]
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
    )
