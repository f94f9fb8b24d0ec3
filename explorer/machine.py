"""What the figures were measured on, and the thread count they were measured with."""

from __future__ import annotations

import os
import platform
from functools import cache
from typing import Any

import torch

from explorer.limits import THREADS


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
