"""Start `world_size` training processes on this machine, joined by torch.distributed over gloo on loopback, and
get back what each one did, however it ended.

Why this shape: a rank can hang in a collective, raise, or abort in C++ (SIGABRT, no Python exception), so the
launcher never trusts a rank to report. Each rank writes its report to a file, its stderr to another, and the
launcher waits until every rank has exited or the wall-clock limit has passed, then kills what is left. The
rendezvous store is the launcher's own (port 0: the kernel picks a free one, nothing to race for), every socket
is on loopback, each rank runs on a core of its own with one thread, and a rank dies with its launcher, from
before its first import (explorer/core/child.py), so a launcher killed at any moment leaves nothing behind.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from explorer.core import child
from explorer.core.child import spawn_args
from explorer.core.machine import ALLOWED_CORES
from explorer.core.paths import sanitize
from explorer.labs.ddp.results import RankOutcome, RankReport, Segment, WorldRun, tidy

LOOPBACK = "127.0.0.1"
START_S = 60.0  # a rank imports torch and joins the group: seconds on a loaded 2-core machine
STDERR_TAIL = 1200  # characters of a rank's stderr kept for the report


def max_world_size() -> int:
    """One process per core the app may use: more only time-slice, and every figure would say so."""
    return len(ALLOWED_CORES)


class RankContext:
    """What a scenario's rank function sees: its rank, the group, a clock, and a report to fill."""

    def __init__(self, rank: int, world_size: int, store: dist.Store, pg_timeout_s: float) -> None:
        self.rank, self.world_size, self.store, self.pg_timeout_s = rank, world_size, store, pg_timeout_s
        self.report = RankReport(rank)
        self._step, self._step_began = 0, time.perf_counter()

    @property
    def step(self) -> int:
        """The step being run (segments are recorded under it); setting it starts the step's clock."""
        return self._step

    @step.setter
    def step(self, value: int) -> None:
        self._step, self._step_began = value, time.perf_counter()

    def phase(self, text: str) -> None:
        """Say what this rank is doing (the launcher shows it while waiting)."""
        self.store.set(f"phase/{self.rank}", text)

    def record(self, kind: str, start_s: float, end_s: float | None = None) -> float:
        """Add a segment of this step from `start_s` to `end_s` (default: now); returns its end."""
        end = time.perf_counter() if end_s is None else end_s
        self.report.segments.append(Segment(self.step, kind, start_s, end))
        return end

    def relabel(self, kind: str, new_kind: str) -> None:
        """Call this step's `kind` segments `new_kind` (known only afterwards: e.g. a forward that compiled)."""
        self.report.segments = [replace(s, kind=new_kind) if s.step == self.step and s.kind == kind else s
                                for s in self.report.segments]

    def fail(self, e: BaseException) -> None:
        self.report.error = tidy(f"{type(e).__name__}: {e}".strip())
        self.report.error_step = self.step
        self.report.error_at_s = time.perf_counter()
        self.report.error_into_step_s = self.report.error_at_s - self._step_began
        self.report.values.setdefault("traceback", sanitize(traceback.format_exc(limit=-3)))


RankFn = Callable[..., None]  # fn(ctx: RankContext, *args): fills ctx.report; may raise


def _stderr_to(path: Path) -> None:
    """fd 2 to a file, for C++ too (gloo's EnforceNotMet is printed there just before abort())."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    os.close(fd)


_GONE = "a rank is gone"  # set by the launcher when a rank died: nobody waits for it any longer


def _together(store: dist.Store, key: str, world_size: int, limit_s: float) -> None:
    """Wait (on the store, not a collective) until every rank has reached `key`, `limit_s` has passed, or the
    launcher has said that a rank died."""
    store.add(key, 1)
    deadline = time.monotonic() + limit_s
    while store.add(key, 0) < world_size and time.monotonic() < deadline and not store.check([_GONE]):
        time.sleep(0.02)


def _rank_main(rank: int, world_size: int, port: int, workdir: str, pg_timeout_s: float, fn: RankFn,
               args: tuple[Any, ...]) -> None:
    """A rank's process, tied to its launcher before the engine was imported (explorer/core/child.py)."""
    work = Path(workdir)
    _stderr_to(work / f"rank{rank}.stderr")
    os.sched_setaffinity(0, {ALLOWED_CORES[rank % len(ALLOWED_CORES)]})
    torch.set_num_threads(1)
    store = dist.TCPStore(LOOPBACK, port, world_size, is_master=False, timeout=timedelta(seconds=START_S))
    dist.init_process_group("gloo", store=dist.PrefixStore("pg", store), rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=pg_timeout_s))
    ctx = RankContext(rank, world_size, store, pg_timeout_s)
    # Ranks start seconds apart on a loaded machine (importing torch): the work starts together, so that a short
    # process-group timeout measures the scenario's hangs, not the start-up's skew.
    _together(store, "started", world_size, START_S)
    try:
        fn(ctx, *args)
    except Exception as e:  # the scenario's point, often: reported, and the other ranks are not disturbed
        ctx.fail(e)
    ctx.report.values.setdefault("steps done", ctx.step)
    partial = work / f"rank{rank}.part"
    partial.write_bytes(pickle.dumps(ctx.report))
    partial.rename(work / f"rank{rank}.pkl")
    # A rank that left early would close its sockets, and a peer stuck in a collective would fail at once with
    # "connection closed" instead of showing the hang until the group's timeout, as in a real program whose other
    # ranks carry on.
    _together(store, "finished", world_size, pg_timeout_s + 2.0)
    # No destroy_process_group: a rank whose collective failed can wait in it; the process is ending anyway.
    os._exit(0)


def _outcome(rank: int, proc: Any, work: Path, at_limit: bool) -> RankOutcome:
    report_file = work / f"rank{rank}.pkl"
    report = pickle.loads(report_file.read_bytes()) if report_file.exists() else None
    code = None if at_limit else proc.exitcode
    sig = signal.Signals(-code).name if code is not None and code < 0 else None
    try:
        tail = (work / f"rank{rank}.stderr").read_text(errors="replace")[-STDERR_TAIL:].strip()
    except OSError:
        tail = ""
    return RankOutcome(rank, report, code, sig, tail)


def launch(label: str, fn: RankFn, args: tuple[Any, ...], world_size: int, pg_timeout_s: float, wall_s: float,
           env: dict[str, str] | None = None, on_phase: Callable[[str], None] | None = None) -> WorldRun:
    """Run `fn(ctx, *args)` in `world_size` fresh processes (nothing of this process's torch state carries over)
    and return how each ended. Never raises for what a rank does; kills every rank still running
    after `wall_s`, and removes every file it made."""
    if not 1 <= world_size <= max_world_size():
        raise ValueError(f"world size must be 1..{max_world_size()} (the cores this app may use); got {world_size}")
    work = Path(tempfile.mkdtemp(prefix="graph-explorer-ddp-"))
    store = dist.TCPStore(LOOPBACK, 0, world_size, is_master=True, timeout=timedelta(seconds=START_S),
                          wait_for_workers=False)
    saved = {k: os.environ.get(k) for k in (env or {}) | {"GLOO_SOCKET_IFNAME": ""}}
    os.environ.update({"GLOO_SOCKET_IFNAME": "lo", **(env or {})})  # read by the ranks as they start
    started = time.monotonic()
    procs: list[Any] = []
    try:
        # forked from the fork server (torch imported, no torch state of this process), or spawned where the ranks
        # need their environment before torch's import (TORCH_DISTRIBUTED_DEBUG is read once, at the first use)
        started_as = child.context(fresh=bool(env))
        procs = [started_as.Process(target=child.run, daemon=True, name=f"rank-{rank}",
                                    args=spawn_args(_rank_main, rank, world_size, store.port, str(work), pg_timeout_s,
                                                    fn, args))
                 for rank in range(world_size)]
        for p in procs:
            p.start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        while any(p.is_alive() for p in procs) and time.monotonic() - started < wall_s:
            time.sleep(0.25)
            if any(p.exitcode not in (None, 0) for p in procs):  # died (a signal, a crash): don't wait for it
                store.set(_GONE, "1")
            if on_phase is not None:
                on_phase(_phases(store, world_size))
        at_limit = [p.is_alive() for p in procs]
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(timeout=10)
        outcomes = [_outcome(rank, p, work, at_limit[rank]) for rank, p in enumerate(procs)]
        return WorldRun(label, world_size, outcomes, time.monotonic() - started)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(timeout=10)
        del store  # closes the listening socket
        shutil.rmtree(work, ignore_errors=True)


def _phases(store: dist.Store, world_size: int) -> str:
    said = []
    for rank in range(world_size):
        key = f"phase/{rank}"
        said.append(f"rank {rank}: {store.get(key).decode()}" if store.check([key]) else f"rank {rank}: starting")
    return "; ".join(said)
