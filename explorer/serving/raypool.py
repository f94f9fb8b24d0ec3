"""The measurement and compile pools on a Ray cluster (`GE_RAY_ADDRESS`): actors, each pinned to a core of its
node that no other of our actors holds. `GE_COMPILE_WORKERS` compile actors run the compile worker's jobs (a
session always on the same one, where its compiled model stays); one measurement actor per remaining CPU runs the
same `TimingJob`s as the embedded pool.

Optional: `pip install -r requirements-ray.txt`; without `GE_RAY_ADDRESS` nothing here is imported. Ray reserves
a CPU for an actor but does not pin it (its affinity is every core), so each actor claims a core of its own with
an exclusive lock file on its node. A dead measurement actor is replaced and its job retried once (said in the
progress); a job past its timeout has its actor killed and replaced. The deployment and multi-process labs keep
their embedded workers (the latter starts a process group of its own)."""

from __future__ import annotations

import fcntl
import os
import platform
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import torch._dynamo

from explorer.core.limits import COMPILE_TIMEOUT_S, COMPILE_WORKERS, MAX_RUN_S, RECOMPILE_LIMIT
from explorer.core.machine import freeze_startup_objects, pin_threads, release_free_memory
from explorer.core.progress import Progress
from explorer.eager import timing
from explorer.serving.pool import Timed, TimingJob
from explorer.workers.messages import Done, Failed
from explorer.workers.process import COMPILER_ENV, START_TIMEOUT_S
from explorer.workers.protocol import Job, WorkerContext, WorkerFailure

R = TypeVar("R")

ROOT = str(Path(__file__).resolve().parents[2])


def connect(address: str) -> Any:
    """The `ray` module, connected to the cluster at `address` (once per process). The actors import this package
    from the app's own directory."""
    import ray  # optional: only a deployment that sets GE_RAY_ADDRESS has it

    if not ray.is_initialized():
        ray.init(address=address, logging_level="WARNING", log_to_driver=False,
                 job_config=ray.job_config.JobConfig(code_search_path=[ROOT]))
    return ray


def compile_actors() -> int:
    """CPUs of the cluster the compile actors reserve: the measurement pool gets the rest."""
    return int(COMPILE_WORKERS)


class _OnCore:
    """Runs in a Ray worker process: claims a free core of its node and pins itself there."""

    def __init__(self) -> None:
        self._lock_file, self.core = self._claim()
        os.sched_setaffinity(0, {self.core})
        pin_threads()
        timing.use_cores(timing.HeldCore(self.core))
        freeze_startup_objects()

    @staticmethod
    def _claim(patience_s: float = 10.0) -> tuple[Any, int]:
        """A core of this node no other actor of ours holds (a replaced actor's may take a moment to be freed)."""
        deadline = time.monotonic() + patience_s
        while True:
            for core in sorted(os.sched_getaffinity(0)):
                f = open(os.path.join("/tmp", f"graph-explorer-ray-core-{core}.lock"), "w")  # noqa: SIM115 (held)
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return f, core
                except OSError:
                    f.close()
            if time.monotonic() > deadline:
                raise RuntimeError("every core of this node already has an actor of ours")
            time.sleep(0.2)

    def where(self) -> tuple[str, int, int]:
        return platform.node(), self.core, os.getpid()


class _Measurer(_OnCore):
    def __init__(self) -> None:
        super().__init__()
        self._ctx = WorkerContext(lambda phase: None)

    def run(self, job: TimingJob) -> Timed:
        return job.run(self._ctx)


class _Compiler(_OnCore):
    """The compile worker's loop as an actor: one job at a time (its `phase` is read from a second thread while a
    job runs), the session's compiled model kept in its context between jobs; compiles and their timings share
    the actor's own core, one after the other."""

    def __init__(self) -> None:
        super().__init__()
        torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
        self._phase = "starting"
        self._ctx = WorkerContext(self._said)

    def _said(self, phase: str) -> None:
        self._phase = phase

    def phase(self) -> str:
        return self._phase

    def run(self, job: Job) -> Done | Failed:
        self._phase = "starting"
        try:
            return Done(job.run(self._ctx))
        except Exception as e:  # reported to the app; the actor stays usable, as the embedded worker does
            return Failed(f"{type(e).__name__}: {e}")
        finally:
            release_free_memory()


class RayCompileService:
    """The compile worker's interface (`run`, `start`, `stop`, `cancel`) on one Ray actor: the jobs of the sessions
    that hash to it run there, one at a time, its compiled model kept between them. A job past its timeout, or a
    cancelled one, has its actor killed and replaced; a dead actor is a WorkerFailure naming it."""

    def __init__(self, address: str, timeout_s: float = COMPILE_TIMEOUT_S, name: str = "compile") -> None:
        self._ray, self.timeout_s, self.name = connect(address), timeout_s, name
        self._remote = self._ray.remote(num_cpus=1, max_restarts=0, max_concurrency=2)(_Compiler).options(
            runtime_env={"env_vars": COMPILER_ENV})
        self._actor: Any = None
        self._jobs = threading.Lock()
        self._cancelled = threading.Event()

    def _started(self) -> Iterator[Progress]:
        if self._actor is None:
            self._actor = self._remote.remote()
        ref, start = self._actor.where.remote(), time.monotonic()
        while not self._ray.wait([ref], timeout=0.5)[0]:
            if time.monotonic() - start > START_TIMEOUT_S:
                self.stop()
                raise WorkerFailure(f"the {self.name} actor on Ray did not start; try again in a moment.")
            yield Progress(time.monotonic() - start, f"starting the {self.name} actor on Ray")
        self.node, self.core, self.pid = self._ray.get(ref)

    def start(self) -> None:
        with self._jobs:
            for _ in self._started():
                pass

    def cancel(self) -> None:
        self._cancelled.set()

    def stop(self) -> None:
        if self._actor is not None:
            self._ray.kill(self._actor)
        self._actor = None

    def run(self, job: Job[R]) -> Iterator[Progress | R]:
        queued = time.monotonic()
        while not self._jobs.acquire(timeout=0.5):
            yield Progress(time.monotonic() - queued, f"waiting for the {self.name} actor (another job)")
        self._cancelled.clear()
        try:
            yield from self._run(job)
        finally:
            self._jobs.release()

    def _run(self, job: Job[R]) -> Iterator[Progress | R]:
        yield from self._started()
        ref, start, phase = self._actor.run.remote(job), time.monotonic(), "starting"
        try:
            while not self._ray.wait([ref], timeout=0.5)[0]:
                if self._cancelled.is_set():
                    raise WorkerFailure(f"the {self.name} was cancelled; its Ray actor was stopped.")
                if time.monotonic() - start > self.timeout_s:
                    raise WorkerFailure(f"{self.name} timed out after {self.timeout_s:.0f} s ({phase}); its Ray "
                                         "actor was stopped and replaced.")
                try:  # (the actor may die between the wait and this question: the job's answer says so below)
                    phase = self._ray.get(self._actor.phase.remote(), timeout=0.4)
                except self._ray.exceptions.GetTimeoutError:
                    pass
                except self._ray.exceptions.RayActorError:
                    break
                yield Progress(time.monotonic() - start, f"{phase} (on Ray, {self.node})")
            try:
                answer = self._ray.get(ref)
            except self._ray.exceptions.RayActorError as e:
                raise WorkerFailure(f"the {self.name} actor on Ray died ({type(e).__name__}) while {phase}; it has "
                                     "been replaced.") from None
        except WorkerFailure:
            self.stop()
            raise
        except GeneratorExit:  # the caller went away mid-job
            self.stop()
            raise
        if isinstance(answer, Failed):
            raise WorkerFailure(answer.error)
        yield answer.reply


class RayPool:
    """The embedded pool's interface (`run`, `start`, `stop`, `size`), on Ray actors."""

    def __init__(self, address: str, timeout_s: float = 3 * MAX_RUN_S) -> None:
        self._ray, self.timeout_s = connect(address), timeout_s
        self._remote = self._ray.remote(num_cpus=1, max_restarts=0)(_Measurer)
        cpus = int(self._ray.cluster_resources().get("CPU", 0))
        if cpus < compile_actors() + 1:  # else the measurement actor waits for a CPU forever: every run would hang
            raise RuntimeError(f"the Ray cluster at {address} has {cpus} CPU(s); its {compile_actors()} compile "
                               f"actor(s) (GE_COMPILE_WORKERS) and at least one measurement actor need "
                               f"{compile_actors() + 1}. Add CPUs (`ray start --num-cpus N`) or lower "
                               "GE_COMPILE_WORKERS.")
        self.size = cpus - compile_actors()
        self._idle: queue.Queue[Any] = queue.Queue()
        for _ in range(self.size):
            self._idle.put(self._remote.remote())

    def start(self) -> None:
        """Wait until every actor has claimed its core (each imports torch: seconds)."""
        self.where()

    def where(self) -> list[tuple[str, int, int]]:
        """(node, core, pid) of every actor, for reports and tests."""
        actors = [self._idle.get() for _ in range(self.size)]
        try:
            return self._ray.get([a.where.remote() for a in actors])
        finally:
            for a in actors:
                self._idle.put(a)

    def run(self, job: TimingJob) -> Iterator[Progress | Timed]:
        actor = self._idle.get()
        try:
            try:
                yield from self._on(actor, job)
            except WorkerFailure as e:
                actor = self._replace(actor)
                yield Progress(0.0, f"{e} Retrying once on a new Ray actor")
                yield from self._on(actor, job)
        finally:
            self._idle.put(actor)

    def _on(self, actor: Any, job: TimingJob) -> Iterator[Progress | Timed]:
        ref, start = actor.run.remote(job), time.monotonic()
        while True:
            done, _ = self._ray.wait([ref], timeout=0.5)
            elapsed = time.monotonic() - start
            if done:
                try:
                    yield self._ray.get(ref)
                    return
                except self._ray.exceptions.RayActorError as e:
                    raise WorkerFailure(f"the Ray actor measuring this run died ({type(e).__name__}).") from None
            if elapsed > self.timeout_s:
                raise WorkerFailure(f"the measurement on Ray timed out after {self.timeout_s:.0f} s.")
            yield Progress(elapsed, "timing on a Ray actor")

    def _replace(self, actor: Any) -> Any:
        self._ray.kill(actor)
        return self._remote.remote()

    def stop(self) -> None:
        for _ in range(self.size):
            self._ray.kill(self._idle.get())
