"""What the figures were measured on: the machine, the thread count, and the cores kept apart for timing.

On a machine with two cores or more, `MEASURE_CORES` are kept for timings (`GE_MEASURE_WORKERS` of them, by
default half the cores): the app's own threads and the compile worker (its compiler subprocesses included) run
on the others, and a timing holds one measuring core for just that long (`explorer.eager.timing.CORES`). So a
compile, or another session's graph capture, never shares a core with a timing, and two timings never share
one. With one core there is nothing to keep apart, and the report says so (the same core twice)."""

from __future__ import annotations

import ctypes
import gc
import os
import platform
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from typing import Any

import torch

from explorer.core.limits import MEASURE_WORKERS, THREADS


def pin_threads() -> None:
    torch.set_num_threads(THREADS)


_CORES_ENV = "GE_ALLOWED_CORES_"  # internal: set by the app's first process, not an operator's knob
_MEASURE_ENV = "GE_MEASURE_CORE_COUNT_"  # internal too
INTERNAL_ENV = (_CORES_ENV, _MEASURE_ENV)  # not to be passed to another app (a benchmark starting one)


def _allowed() -> list[int]:
    """The cores this app may use. Read once, in the first process, and handed down in the environment: the compile
    worker and the distributed ranks start from a thread already kept off the measuring core, so their own
    affinity no longer shows the machine."""
    inherited = os.environ.get(_CORES_ENV)
    cores = [int(c) for c in inherited.split(",")] if inherited else sorted(os.sched_getaffinity(0))
    os.environ[_CORES_ENV] = ",".join(map(str, cores))
    return cores


ALLOWED_CORES = tuple(_allowed())


def _cores() -> tuple[frozenset[int], frozenset[int]]:
    allowed = list(ALLOWED_CORES)
    if len(allowed) < 2:
        return frozenset(allowed), frozenset(allowed)
    inherited = os.environ.get(_MEASURE_ENV)  # handed down like the allowed cores
    n = int(inherited) if inherited else min(int(MEASURE_WORKERS), len(allowed) - 1)  # one core left to the server
    os.environ[_MEASURE_ENV] = str(n)
    return frozenset(allowed[:n]), frozenset(allowed[n:])


MEASURE_CORES, OTHER_CORES = _cores()  # timing; everything else (server threads, the compile worker)


def keep_off_measure_cores() -> None:
    """Run this thread, and every thread and process it starts from now on, off the measuring core."""
    os.sched_setaffinity(0, OTHER_CORES)


@contextmanager
def on_core(core: int) -> Iterator[tuple[int, ...]]:
    """Move this thread onto one measuring core for the block; yields it (as the report's `cores`)."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        yield (core,)
    finally:
        os.sched_setaffinity(0, before)


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


@dataclass(frozen=True)
class Machine:
    """What a figure was measured on; said once per report (`as_dict`) and once per sentence (`line`)."""

    torch: str
    python: str
    node: str  # the host: a run timed on a Ray node says that node instead
    device: str
    cpu: str
    cores: int | None
    threads: int
    measure_cores: tuple[int, ...]
    other_cores: tuple[int, ...]

    def line(self) -> str:
        """'cpu (AMD EPYC 7B13), 1 thread(s), torch 2.13.0+cpu'."""
        return f"{self.device} ({self.cpu}), {self.threads} thread(s), torch {self.torch}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "measure_cores": list(self.measure_cores), "other_cores": list(self.other_cores)}

    def same_server(self, other: Machine) -> bool:
        """The same host, python, torch, CPU and threads: a figure one measured is the other's, whichever of its
        cores timed it (each test process, each restart may measure on another)."""
        return replace(self, measure_cores=(), other_cores=()) == replace(other, measure_cores=(), other_cores=())

    @classmethod
    def of(cls, report: Mapping[str, Any]) -> Machine:
        """A report's machine (its JSON form) read back."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in report.items() if k in known}
        return cls(**{**values, "measure_cores": tuple(values.get("measure_cores", ())),
                      "other_cores": tuple(values.get("other_cores", ()))})


def this_machine() -> Machine:
    return Machine(torch=torch.__version__, python=platform.python_version(), node=platform.node(), device="cpu",
                   cpu=_cpu_model(), cores=os.cpu_count(), threads=int(THREADS),
                   measure_cores=tuple(sorted(MEASURE_CORES)), other_cores=tuple(sorted(OTHER_CORES)))


def describe() -> dict[str, Any]:
    """This machine as a report's JSON object."""
    return this_machine().as_dict()


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


def freeze_startup_objects() -> None:
    """Take every object alive now (torch's, dynamo's, gradio's modules: 291,000 in a measurement process, 407,000
    in the server) out of the cycle collector's reach, once start-up is done.

    A full collection walks every tracked object: a median 158 ms in a measurement process, on the measuring core
    after every memory profile (memory.py collects the profiler's cycles), and 297 ms with the GIL held in the
    server whenever Python runs one by itself. Frozen, a collection walks only what was made since, and one
    memory profile took 148 ms instead of 407 ms (bench/RESULTS-gc.md)."""
    gc.collect()
    gc.freeze()


def release_free_memory() -> None:
    """Hand freed heap memory back to the OS (glibc's malloc_trim).

    Runs execute on many server threads, and glibc keeps a malloc arena per thread that holds on to freed
    tensors' memory: the app's 1,000-interaction soak grew by +814 MiB without this and +126 MiB with it and
    `limit_malloc_arenas` (bench/RESULTS-load.md). It runs outside any timing."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
