"""What the figures were measured on, and the thread count they were measured with."""

from __future__ import annotations

import ctypes
import os
import platform
from functools import cache
from typing import Any

import torch

from explorer.core.limits import THREADS


def pin_threads() -> None:
    torch.set_num_threads(THREADS)


@cache
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe() -> dict[str, Any]:
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": "cpu",
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "threads": THREADS,
    }


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:  # not glibc: nothing to tune
        return None


_LIBC = _glibc()
_M_ARENA_MAX = -8  # glibc's mallopt parameter number


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas (default: 8 per core) before the server starts its threads: each arena
    keeps its own freed memory, and a server thread per waiting run makes many of them."""
    if _LIBC is not None:
        _LIBC.mallopt(_M_ARENA_MAX, arenas)


def release_free_memory() -> None:
    """Hand freed heap memory back to the OS (glibc's malloc_trim).

    Runs execute on many server threads, and glibc keeps a malloc arena per thread that holds on to freed
    tensors' memory: 300 Playground updates on 16 threads grew RSS by ~909 MB without this and ~7 MB with it;
    the app's 1,000-interaction soak (bench/RESULTS-load.md) went from +814 MB to +126 MB with this and
    `limit_malloc_arenas`. A call took 0.08 ms here, outside any timing."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
