"""The measurement pool on a Ray cluster (`GE_RAY_ADDRESS`): one actor per CPU the cluster offers, each pinned to
a core of its node that no other of our actors holds, running the same `TimingJob`s as the embedded pool.

Optional: `pip install -r requirements-ray.txt`; without `GE_RAY_ADDRESS` nothing here is imported. Ray reserves
a CPU for an actor but does not pin it (its affinity is every core), so each actor claims a core of its own with
an exclusive lock file on its node. A dead actor is replaced and its job retried once (said in the progress);
a job past its timeout has its actor killed and replaced."""

from __future__ import annotations

import fcntl
import os
import platform
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from explorer.compile.protocol import CompileFailure, Progress, WorkerContext
from explorer.core.limits import MAX_RUN_S
from explorer.core.machine import pin_threads
from explorer.eager import timing
from explorer.serving.pool import Timed, TimingJob

ROOT = str(Path(__file__).resolve().parents[2])


class _Actor:
    """Runs in a Ray worker process: claims a free core of its node, pins itself there, times jobs."""

    def __init__(self) -> None:
        self._lock_file, self.core = self._claim()
        os.sched_setaffinity(0, {self.core})
        pin_threads()
        timing.use_cores(timing.HeldCore(self.core))
        self._ctx = WorkerContext(lambda phase: None)

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
                raise RuntimeError("every core of this node already has a measuring actor")
            time.sleep(0.2)

    def where(self) -> tuple[str, int, int]:
        return platform.node(), self.core, os.getpid()

    def run(self, job: TimingJob) -> Timed:
        return job.run(self._ctx)


class RayPool:
    """The embedded pool's interface (`run`, `start`, `stop`, `size`), on Ray actors."""

    def __init__(self, address: str, timeout_s: float = 3 * MAX_RUN_S) -> None:
        import ray  # optional: only a deployment that sets GE_RAY_ADDRESS has it

        self._ray, self.timeout_s = ray, timeout_s
        self._owns = not ray.is_initialized()
        if self._owns:  # the actors import this package from the app's own directory
            ray.init(address=address, logging_level="WARNING", log_to_driver=False,
                     job_config=ray.job_config.JobConfig(code_search_path=[ROOT]))
        self._remote = ray.remote(num_cpus=1, max_restarts=0)(_Actor)
        self.size = max(1, int(ray.cluster_resources().get("CPU", 1)))
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
            except CompileFailure as e:
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
                    raise CompileFailure(f"the Ray actor measuring this run died ({type(e).__name__}).") from None
            if elapsed > self.timeout_s:
                raise CompileFailure(f"the measurement on Ray timed out after {self.timeout_s:.0f} s.")
            yield Progress(elapsed, "timing on a Ray actor")

    def _replace(self, actor: Any) -> Any:
        self._ray.kill(actor)
        return self._remote.remote()

    def stop(self) -> None:
        for _ in range(self.size):
            self._ray.kill(self._idle.get())
        if self._owns:
            self._ray.shutdown()
