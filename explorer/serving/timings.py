"""A run's timings for a request: reused if the same input was timed moments ago, joined if it is being timed
right now (thirty students opening one link make one measurement, not thirty), else measured in its turn of
the queue by the measurement pool. Yields Progress until the timings (`Sourced`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Protocol

from explorer.core.progress import Progress
from explorer.serving.pool import Timed, TimingJob
from explorer.serving.queueing import STATUS_EVERY_S, Turn, queued
from explorer.serving.shared import RECENT, RecentTimings, Sourced
from explorer.workers.protocol import WorkerContext


class Timer(Protocol):
    def run(self, job: TimingJob) -> Iterator[Progress | Timed]: ...


class InProcess:
    """The pool's interface, timing in the calling thread (the CLI, tests): `measure` holds a core per timing."""

    def __init__(self) -> None:
        self._local = threading.local()  # a thread's built models, as a measurement process keeps its own

    def run(self, job: TimingJob) -> Iterator[Progress | Timed]:
        ctx = getattr(self._local, "ctx", None) or WorkerContext(lambda phase: None)
        self._local.ctx = ctx
        yield job.run(ctx)


def timings(key: str, job: Callable[[Turn], TimingJob], timer: Timer, fresh: bool = False,
            recent: RecentTimings = RECENT, estimate_s: float | None = None,
            session: str = "") -> Iterator[Progress | Sourced]:
    """`job(turn)` is built in the queue turn (its budget shrinks under load); `estimate_s`, the plan's, is said
    with the progress of a long measurement; `session`, for whom, tells a reuse of its own timing from another's."""
    while True:
        hit = None if fresh else recent.recent(key, session)
        if hit is not None:
            yield hit
            return
        running = recent.begin(key)
        if running is None:
            break
        while not running.wait(STATUS_EVERY_S):
            yield Progress.said("This very input is being timed for another session right now; its figures will "
                                "be shared…")
        fresh = False  # what that measurement found is as fresh as this one would be

    def work(turn: Turn) -> Generator[Progress, None, Sourced]:
        # Progress after STATUS_EVERY_S of measuring, then as often: a run measured in a fraction of a second (most,
        # under load) says nothing between its graph and its figures, a message fewer for the server's core to send.
        said = time.monotonic()
        timed = None
        for step in timer.run(job(turn)):
            if isinstance(step, Timed):
                timed = step
            elif time.monotonic() - said >= STATUS_EVERY_S:  # a long run says how far it is; a short one is quiet
                said = time.monotonic()
                of = f" of about {estimate_s:.0f} s" if estimate_s else ""
                yield Progress(step.elapsed_s, f"Measuring: {step.phase}, {step.elapsed_s:.0f} s{of}…")
        assert timed is not None, "a timer ends with its timings"
        recent.put(key, timed, session)
        return Sourced(timed, notice=turn.notice(), unprofiled=not turn.profiles)

    try:
        sourced = yield from queued(work)
    finally:
        recent.end(key)  # those waiting for this very input get it now, not after this caller has shown it
    yield sourced
