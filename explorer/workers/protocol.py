"""What crosses the pipe between the app and a worker process: typed jobs, progress, and failures.

A job is a picklable dataclass that knows how to run itself in the worker (`Job.run`), and its reply is a
dataclass too: the worker dispatches by the job's type and never parses a dict. Each lab defines its own job
next to the code it runs, so the worker imports no lab."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from explorer.core.progress import Progress

R = TypeVar("R")


class WorkerFailure(RuntimeError):
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
    """Where jobs run: a worker process (process.py), or its actor on a Ray cluster (serving/raypool.py)."""

    def run(self, job: Job[R]) -> Iterator[Progress | R]:
        """Yields Progress while the job runs, then its reply; raises WorkerFailure."""
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


COMPILE = "compile"  # the session's compile worker: where every job runs that has no worker of its own


@dataclass(frozen=True)
class Workers(Mapping[str, JobRunner]):
    """The worker processes an experiment may use, by name: the session's compile worker (`COMPILE`) and each
    lab's own (its spec's `OwnWorker`, under the same name); with `everywhere`, one runner for any name (a
    notebook's kernel, a test). `quick` asks for the smallest version of an experiment (fewer inputs and models, a
    tracing backend; for tests and `bench --quick`, never shown as the claim's evidence in the app)."""

    runners: Mapping[str, JobRunner]
    quick: bool = False
    # Jobs that ask for a fresh process may start one (the optimization lab serves each strategy in one, as after a
    # deploy); False: they run on `compile` instead (a notebook's kernel runs everything in itself).
    fresh: bool = False
    everywhere: JobRunner | None = None

    @classmethod
    def on(cls, runner: JobRunner, quick: bool = False) -> Workers:
        """Every job on `runner`, whichever worker it names."""
        return cls({COMPILE: runner}, quick=quick, everywhere=runner)

    @property
    def compile(self) -> JobRunner:
        return self[COMPILE]

    def __getitem__(self, name: str) -> JobRunner:
        if name in self.runners:
            return self.runners[name]
        if self.everywhere is not None:
            return self.everywhere
        raise KeyError(f"no worker named {name!r}; these are: {', '.join(self.runners)}")

    def __iter__(self) -> Iterator[str]:
        return iter(self.runners)

    def __len__(self) -> int:
        return len(self.runners)

    def stop(self) -> None:
        """Stop each worker once (a CLI run's end)."""
        for runner in {id(r): r for r in self.values()}.values():
            runner.stop()
