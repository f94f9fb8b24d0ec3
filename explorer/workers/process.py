"""A worker process: jobs (a compile, an export, a distributed run, a visitor's code) run in a child process that
can be timed out and killed. The compile worker is one, the deployment, distributed, optimization and code workers
are others (named by `name`).

Why a process: dynamo's caches, counters and recompile limits are process-global, a compile can
hang or crash, and only a process can be stopped from outside. One worker runs one job at a time (on 2 cores
concurrent compiles only duplicate work). A job is a typed
`protocol.Job` that runs itself in the worker; its reply comes back as the job's own reply type.

Timing stays fair: the worker asks the parent for a measuring core before each timing, so no two
figures are ever taken on one core at once. The same service, given a `core`, runs a measurement process
pinned to that core (explorer/serving/pool.py): its parent holds the core for each job.
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import importlib
import logging
import multiprocessing as mp
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

import torch._dynamo

from explorer.core import child as child_process
from explorer.core.child import spawn_args
from explorer.core.confine import confine, cpu_budget
from explorer.core.errors import USER_ERRORS
from explorer.core.limits import (
    CODE_CPU_S,
    CODE_MEMORY_MB,
    CODE_PROCS,
    COMPILE_TIMEOUT_S,
    RECOMPILE_LIMIT,
    WORKER_RSS_MB,
)
from explorer.core.machine import freeze_startup_objects, keep_off_measure_cores, pin_threads, release_free_memory
from explorer.core.progress import Progress
from explorer.eager import timing
from explorer.workers.messages import Acquire, Done, Failed, Granted, Phase, Ready, Release, RunJob, Stop
from explorer.workers.protocol import Job, WorkerContext, WorkerFailure

log = logging.getLogger("graph_explorer")
START_TIMEOUT_S = 90  # a new worker imports torch and dynamo: seconds on a busy 2-core machine

# Read by torch's compiler when a worker imports it (the Ray compile actors get them too):
COMPILER_ENV = {
    # compile in the worker itself, not in a pool of processes that would spread over every core (the worker
    # keeps off the measuring core; see machine.py);
    "TORCHINDUCTOR_COMPILE_THREADS": "1",
    # a job id turns on dynamo's local automatic-dynamic profile (PGO), kept in inductor's cache directory: once a
    # model's length has varied, later compiles of it (any session, after a restart too) start symbolic, and so
    # hit the cached symbolic graph. See warmup.py.
    "TORCH_COMPILE_JOB_ID": "graph-explorer",
}


R = TypeVar("R")


class _ParentCores:
    """In the worker: the app's measuring cores, held and given back over the pipe."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    @contextlib.contextmanager
    def _held(self, which: str) -> Iterator[Any]:
        self._conn.send(Acquire(which))
        granted = self._conn.recv()
        assert isinstance(granted, Granted), granted
        try:
            yield granted.cores
        finally:
            self._conn.send(Release())

    def hold(self) -> contextlib.AbstractContextManager[int]:
        return self._held("one")

    def every(self) -> contextlib.AbstractContextManager[None]:
        return self._held("every")


def _private_tmp(tmpdir: str) -> None:
    """Send the worker's temporary files (the C++ compiler's included) to a directory the parent removes,
    so a killed compile leaves nothing behind; inductor's cache stays where it always is."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                          os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}"))
    os.environ["TMPDIR"] = tempfile.tempdir = tmpdir


def _worker_main(conn: Any, tmpdir: str, core: int | None, confined: bool = False, idle: bool = False) -> None:
    if idle:  # work nobody waits for: it runs only on what the server's other threads and processes leave idle
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # (its threads, started later, inherit it)
    _private_tmp(tmpdir)
    if core is None:
        keep_off_measure_cores()  # compiling (and the C++ compiler it starts) never shares a core with a timing
        timing.use_cores(_ParentCores(conn))
    else:
        os.sched_setaffinity(0, {core})
        timing.use_cores(timing.HeldCore(core))  # the parent holds it for each job
    pin_threads()
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    ctx = WorkerContext(lambda phase: conn.send(Phase(phase)))
    freeze_startup_objects()
    if confined:  # a visitor's code runs here: walls up before the first job (explorer/core/confine.py)
        importlib.import_module("explorer.sources.registry")  # the operator's files (GE_MODELS), read before the
        # walls clear the environment
        try:
            confine(tmpdir, int(CODE_MEMORY_MB), int(CODE_PROCS), conn.fileno())
        except OSError as e:  # a wall the kernel offered did not go up: no visitor's code runs without it
            conn.send(Failed(f"the code worker's walls did not go up: {e.strerror or e}"))
            return
    conn.send(Ready())
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if isinstance(message, Stop):
            return
        if confined:
            cpu_budget(CODE_CPU_S)
        try:
            reply: Done | Failed = Done(message.job.run(ctx))
        except Exception as e:  # reported to the parent; the worker stays usable
            # a refusal of the person's input is already written for them: said as it is, not as a crash
            reply = Failed(str(e) if isinstance(e, USER_ERRORS) else f"{type(e).__name__}: {e}")
        try:
            conn.send(reply)
        except (BrokenPipeError, EOFError):  # the parent let go of this worker (timeout, shutdown): exit quietly
            return
        release_free_memory()  # after the reply: the person waiting for it does not wait for this too


_LIVE: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()
# The app is exiting: no worker starts any more. A background job (the start-up warm-up) that went on after the
# workers were stopped used to start a new one, which multiprocessing's exit then joined while it waited on its pipe.
_STOPPING = threading.Event()


@atexit.register  # before multiprocessing's own exit function (registered first, so run last) joins children
def stop_every_worker() -> None:
    """Stop every worker of this process, and start none after (the app's exit; explorer/server.py calls it first)."""
    _STOPPING.set()
    for service in list(_LIVE):
        service.stop()


def _remove_when_gone(proc: Any, tmpdir: str) -> None:
    mp.connection.wait([proc.sentinel])
    shutil.rmtree(tmpdir, ignore_errors=True)


def resident_mb(pid: int, field: str = "VmRSS") -> float | None:
    """A process's resident memory in MB (VmRSS; VmHWM: its peak since its program started, which getrusage's
    ru_maxrss is not: it keeps the peak of the process that forked it), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith(f"{field}:"))
    except (OSError, StopIteration):
        return None


class WorkerProcess:
    """The parent side: one worker process, started lazily, replaced after a timeout or crash, and recycled
    between jobs past `max_rss_mb` resident or after `max_jobs` jobs (for workers whose jobs leave things behind:
    traced modules, exported programs), so that nothing it keeps grows without bound. Forked from the fork server
    (explorer/core/child.py: ready in a fraction of a second), or `spawned` in a fresh interpreter (bench/
    worker_start.py compares the two), as it is whenever it has an `env` of its own."""

    def __init__(self, timeout_s: float = COMPILE_TIMEOUT_S, name: str = "compile",
                 advice: str = "Try a shorter input, backend aot_eager or eager, or dynamic=true.",
                 starts_processes: bool = False, core: int | None = None, max_jobs: int | None = None,
                 max_rss_mb: float = WORKER_RSS_MB, confined: bool = False, env: Mapping[str, str] | None = None,
                 spawned: bool = False, idle: bool = False) -> None:
        self.timeout_s, self.name, self.advice, self.core = timeout_s, name, advice, core
        self.idle = idle  # the lowest scheduling priority (SCHED_IDLE): background work (serving/background.py)
        self._spawned = spawned
        self.env = dict(env or {})  # the worker's own, on top of the app's (TORCH_TRACE for a traced compile)
        if confined:  # numpy's OpenBLAS would start a thread at import, which the walls could not bind
            self.env.setdefault("OPENBLAS_NUM_THREADS", "1")
        self.confined = confined  # runs a visitor's code: walled in (explorer/core/confine.py)
        self.max_jobs, self.max_rss_mb = max_jobs, max_rss_mb
        self.recycled: list[str] = []  # why each worker was replaced between jobs, in order
        self._jobs_done = 0
        # A daemonic process may not start processes of its own: a worker that does is not one. Every worker is
        # stopped, and its directory removed, at the app's exit (a SIGTERM too: explorer/server.py), and exits
        # by itself if the app dies (explorer/core/child.py).
        self._daemon = not starts_processes
        _LIVE.add(self)
        # forked from the fork server, or spawned: asked for, or for an environment of its own (set before imports)
        self._ctx = child_process.context(fresh=spawned or bool(self.env))
        self._proc: Any = None
        self._tmp = ""
        self._conn: Any = None
        self._jobs = threading.Lock()  # one job at a time
        self._shutting = threading.Lock()
        self._cancelled = threading.Event()

    def idle_twin(self) -> WorkerProcess:
        """A worker like this one at the lowest scheduling priority, for work nobody waits for."""
        return WorkerProcess(self.timeout_s, f"{self.name} (background)", self.advice, not self._daemon, self.core,
                             self.max_jobs, self.max_rss_mb, self.confined, self.env, self._spawned, idle=True)

    def _start(self) -> None:
        if _STOPPING.is_set():
            raise WorkerFailure(f"the server is stopping: the {self.name} worker does not start again.")
        for name, value in COMPILER_ENV.items():
            os.environ.setdefault(name, value)
        parent, child = self._ctx.Pipe()
        self._tmp = tempfile.mkdtemp(prefix="graph-explorer-compile-")
        self._proc = self._ctx.Process(target=child_process.run, daemon=self._daemon, name=f"{self.name}-worker",
                                       args=spawn_args(_worker_main, self._tmp, self.core, self.confined, self.idle,
                                                       handles=(child,), env=self.env))
        self._proc.start()
        child.close()
        self._conn = parent
        if _STOPPING.is_set():  # the exit began while it started: it goes with the others
            self._shut(idle=False)
            raise WorkerFailure(f"the server is stopping: the {self.name} worker does not start again.")
        # However it ends (a SIGKILL too, while idle), its directory goes when it does: not at the next job.
        threading.Thread(target=_remove_when_gone, args=(self._proc, self._tmp), daemon=True,
                         name=f"{self.name}-worker-watch").start()

    def stop(self) -> None:
        """Stop the worker (if any) and reap it: asked to exit when idle, killed when mid-job."""
        idle = self._jobs.acquire(blocking=False)
        try:
            self._shut(idle)
        finally:
            if idle:
                self._jobs.release()

    def _shut(self, idle: bool) -> None:
        with self._shutting:  # the app's exit and a job's own failure may stop it at once, from two threads
            proc, conn = self._proc, self._conn
            if proc is not None:
                if idle and proc.is_alive() and conn is not None:
                    with contextlib.suppress(OSError):
                        conn.send(Stop())
                    proc.join(timeout=5)
                if self.confined and proc.pid:  # its own process group: what the visitor's code forked goes too
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                if proc.is_alive():
                    proc.kill()
                    proc.join(timeout=10)
                if conn is not None:
                    conn.close()
                shutil.rmtree(self._tmp, ignore_errors=True)
            self._proc = self._conn = None

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before it starts): a new one after a replacement."""
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def cancel(self) -> None:
        """Stop the running job from another thread (its caller went away): the job raises WorkerFailure within
        half a second, and its worker, with every process it started, is stopped."""
        self._cancelled.set()

    def start(self) -> None:
        """Start the worker now (it imports torch: seconds), so that the first job does not wait for it."""
        with self._jobs:
            for _ in self._started():
                pass

    def run(self, job: Job[R]) -> Iterator[Progress | R]:
        """Send a job; yield Progress every ~0.5 s, then the job's reply. Raises WorkerFailure."""
        queued = time.monotonic()
        while not self._jobs.acquire(timeout=0.5):
            yield Progress(time.monotonic() - queued, f"waiting for the {self.name} worker (another job, or the "
                                                      "start-up warm-up)")
        self._cancelled.clear()
        try:
            yield from self._run(job)
            self._recycle_if_due()
        finally:
            self._jobs.release()

    def _recycle_if_due(self) -> None:
        """Between jobs (the lock held, the reply given): replace a worker that has run its jobs or grown past its
        ceiling; the next job starts a fresh one."""
        self._jobs_done += 1
        rss = resident_mb(self._proc.pid) if self.alive else None
        if self.confined and self.alive and _has_children(self._proc.pid):
            why = "after its job's code started processes (a copy of the worker could answer for it)"
        elif self.max_jobs is not None and self._jobs_done >= self.max_jobs:
            why = f"after {self._jobs_done} jobs"
        elif rss is not None and rss > self.max_rss_mb:
            why = f"at {rss:,.0f} MB resident, past {self.max_rss_mb:,.0f} MB"
        else:
            return
        log.info("the %s worker is replaced %s", self.name, why)
        self.recycled.append(why)
        self._shut(idle=True)

    def _started(self) -> Iterator[Progress]:
        """Start a worker if there is none, and wait until it has imported torch (not job time)."""
        if self.alive:
            return
        self.stop()
        self._start()
        self._jobs_done = 0
        start = time.monotonic()
        while not self._conn.poll(0.5):
            if not self._proc.is_alive() or time.monotonic() - start > START_TIMEOUT_S:
                self.stop()
                raise WorkerFailure(f"the {self.name} worker did not start; try again in a moment.")
            yield Progress(time.monotonic() - start, f"starting the {self.name} worker")
        try:
            ready = self._conn.recv()
        except (EOFError, OSError):  # it died as it started (or the app is stopping and stopped it)
            ready = None
        if not isinstance(ready, Ready):
            self.stop()
            raise WorkerFailure(ready.error if isinstance(ready, Failed) else
                                 f"the {self.name} worker did not start properly; try again.")

    def _run(self, job: Job[R]) -> Iterator[Progress | R]:
        yield from self._started()
        self._conn.send(RunJob(job))
        start = time.monotonic()
        held = contextlib.ExitStack()  # the measuring core(s) the worker holds for a timing
        waited = 0.0  # time spent waiting for a measuring core does not count against the timeout
        phase = "running its job"  # until the job says what it is doing (it was started: not "starting")
        failed = False
        try:
            while True:
                elapsed = time.monotonic() - start
                if self._cancelled.is_set():
                    raise WorkerFailure(f"the {self.name} was cancelled; its worker was stopped.")
                if elapsed - waited > self.timeout_s:
                    raise WorkerFailure(
                        f"{self.name} timed out after {self.timeout_s:.0f} s ({phase}); the {self.name} worker was "
                        f"stopped and restarted. {self.advice}")
                if not self._conn.poll(0.5):
                    if not self._proc.is_alive():
                        raise WorkerFailure(f"the {self.name} worker died ({_ended(self._proc.exitcode)}) "
                                             f"while {phase}; it has been restarted.")
                    yield Progress(elapsed, phase)
                    continue
                try:
                    message = self._conn.recv()
                except (EOFError, OSError):
                    self._proc.join(timeout=2)
                    raise WorkerFailure(f"the {self.name} worker died ({_ended(self._proc.exitcode)}) while {phase}; "
                                         "it has been restarted.") from None
                match message:
                    case Phase(text):
                        phase = text
                    case Acquire(which):
                        t0 = time.monotonic()
                        cores = held.enter_context(timing.CORES.hold() if which == "one" else timing.CORES.every())
                        waited += time.monotonic() - t0
                        self._conn.send(Granted(cores))
                    case Release():
                        held.close()
                    case Done(reply):
                        yield reply
                        return
                    case Failed(error):  # the job failed in a way the worker survived
                        failed = True
                        raise WorkerFailure(error)
                    case _:
                        raise WorkerFailure(f"the {self.name} worker sent {type(message).__name__}; restarted.")
        except (GeneratorExit, KeyboardInterrupt):  # the caller went away mid-job (a notebook's interrupt too: the
            # worker itself ignores it, explorer/core/child.py): its replies would reach the next job
            self.stop()
            raise
        except WorkerFailure:
            held.close()
            if not failed:  # stopped, or died: reaped and its files removed now
                self.stop()
            raise
        finally:
            held.close()


def _has_children(pid: int) -> bool:
    """Whether process `pid` has a live child (a zombie is already gone)."""
    for stat in os.listdir("/proc"):
        if stat.isdigit():
            try:
                with open(f"/proc/{stat}/stat") as f:
                    state, parent = f.read().rsplit(")", 1)[1].split()[:2]
            except OSError:
                continue
            if int(parent) == pid and state != "Z":
                return True
    return False


def _ended(code: int | None) -> str:
    """'exit code 1', or the signal that ended a process: 'SIGSEGV', 'SIGXCPU: its CPU time ran out'."""
    if code is None or code >= 0:
        return f"exit code {code}"
    name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
    return f"{name}: its CPU time ran out" if -code == signal.SIGXCPU else name
