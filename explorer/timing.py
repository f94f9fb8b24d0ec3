"""Latency measurements with torch.utils.benchmark, as value objects with their spread.

Measurements run one at a time across the whole process (`MEASURE_LOCK`): on 2 cores, two timings
at once corrupt each other. The thread count is pinned and recorded with every figure.
"""

from __future__ import annotations

import threading
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


def measure(label: str, fn: Callable[[], object], min_run_time: float) -> Measurement:
    """Time `fn` for at least `min_run_time` seconds after one warm-up call."""
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=THREADS, label=label)
    with MEASURE_LOCK:
        fn()
        m = timer.blocked_autorange(min_run_time=min_run_time)
    times = [t * 1e3 for t in m.times]
    return Measurement(
        label=label,
        median_ms=m.median * 1e3,
        iqr_ms=m.iqr * 1e3,
        min_ms=min(times),
        max_ms=max(times),
        runs=len(times),
        calls_per_run=m.number_per_run,
        threads=THREADS,
    )
