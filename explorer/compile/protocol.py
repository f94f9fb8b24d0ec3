"""What crosses the pipe between the app and the compile worker: typed jobs, progress, and failures.

A job is a picklable dataclass that knows how to run itself in the worker (`Job.run`), and its reply is a
dataclass too: the worker dispatches by the job's type and never parses a dict. Each lab defines its own job
next to the code it runs, so the worker imports no lab."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from explorer.core.progress import Progress

R = TypeVar("R")


class CompileFailure(RuntimeError):
    """The worker timed out or died; the message says which. The worker has been replaced."""


class WorkerContext:
    """What a job sees in the worker: a way to say what it is doing, and one slot that outlives the job
    (the Playground keeps its compiled model there between jobs of the same session)."""

    def __init__(self, phase: Callable[[str], None]) -> None:
        self.phase = phase
        self.held: Any = None


class Job(ABC, Generic[R]):
    @abstractmethod
    def run(self, ctx: WorkerContext) -> R:
        """Runs in the worker process; the return value is sent back to the app."""


class JobRunner(Protocol):
    """Where jobs run: the compile worker (worker.py), or its actor on a Ray cluster (serving/raypool.py)."""

    def run(self, job: Job[R]) -> Iterator[Progress | R]:
        """Yields Progress while the job runs, then its reply; raises CompileFailure."""
        ...

    def cancel(self) -> None: ...

    def stop(self) -> None: ...


def run_said(runner: JobRunner, job: Job[R], said: str) -> Generator[Progress, None, R]:
    """`job` on `runner`: its progress passed on, each phase prefixed with `said` (which job of several this is);
    its reply returned (`reply = yield from run_said(...)`)."""
    reply: Any = None
    for item in runner.run(job):
        if isinstance(item, Progress):
            yield Progress(item.elapsed_s, f"{said}: {item.phase}")
        else:
            reply = item
    return reply


class Here:
    """Jobs run in the calling process (a notebook's kernel; a job that runs other jobs inside the code worker),
    their phases said to `phase`."""

    def __init__(self, phase: Callable[[str], None] = lambda phase: None) -> None:
        self._ctx = WorkerContext(phase)

    def run(self, job: Job[R]) -> Iterator[Progress | R]:
        yield job.run(self._ctx)

    def cancel(self) -> None:
        pass

    def stop(self) -> None:
        pass


@dataclass(frozen=True)
class Workers:
    """The worker processes an experiment may use (compiles, exports and distributed runs each have their own),
    and whether to run the smallest version of it (`quick`: fewer inputs and models, a tracing backend; for tests
    and `bench --quick`, never shown as the claim's evidence in the app)."""

    compile: JobRunner
    deploy: JobRunner
    ddp: JobRunner
    quick: bool = False
    # A runner that starts a fresh process for its job, with this time bound (the optimization lab serves each
    # strategy in one, as after a deploy); None: jobs that ask for one run on `compile` instead.
    fresh: Callable[[float], JobRunner] | None = None
