"""The server-wide measurement queue: as many runs timed at once as there are measuring cores (one on a 2-core
machine), first come first served.

Two timings on one core corrupt each other, so runs wait their turn here. Waiters see their place and how long
they have waited (the caller streams it to the UI), a full queue refuses at once with a "busy" message instead
of an unbounded wait, and a long queue shortens the timing budget (and says so)."""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import TypeVar

from explorer.core.errors import InputError
from explorer.core.limits import LOAD_QUEUE, MAX_QUEUE, PROFILE_QUEUE
from explorer.core.machine import MEASURE_CORES, release_free_memory
from explorer.core.progress import Progress

R = TypeVar("R")
MIN_BUDGET_SCALE = 0.25  # the shortest a timing gets under load: a quarter of its budget


# Said of a run whose input has no memory peaks because its turn refused the profile (see Turn.profiles).
NOT_PROFILED = ("No memory profile of this input: with this many waiting it would keep everyone behind waiting "
                "several times longer (a run of this input once fewer are waiting profiles it).")


class Busy(InputError):
    """The queue is full: try again in a moment."""


@dataclass(frozen=True)
class Wait:
    ahead: int  # runs before this one (the one running included)
    waited_s: float


@dataclass(frozen=True)
class Turn:
    waited_s: float
    queued_behind: int  # how many were waiting behind when the turn came
    budget_scale: float  # 1.0, or less under load

    @property
    def profiles(self) -> bool:
        """Whether a memory profile may take the measuring core in this turn: not with GE_PROFILE_QUEUE waiting."""
        return self.queued_behind < PROFILE_QUEUE

    def notice(self) -> str | None:
        """What the wait and the load did to this run's timings."""
        parts = []
        if self.waited_s >= 0.5:
            parts.append(f"Waited {self.waited_s:.1f} s for the measurement queue (one run at a time, server-wide).")
        if self.budget_scale < 1.0:
            parts.append(f"Under load ({self.queued_behind} waiting): timing budget cut to "
                         f"{self.budget_scale:.0%}, so fewer runs and a wider spread.")
        return " ".join(parts) or None


class MeasureQueue:
    def __init__(self, max_waiting: int = MAX_QUEUE, load_at: int = LOAD_QUEUE, poll_s: float = 0.5,
                 slots: int = len(MEASURE_CORES)) -> None:
        self.max_waiting, self.load_at, self.poll_s, self.slots = max_waiting, load_at, poll_s, slots
        self._cond = threading.Condition()
        self._tickets: deque[int] = deque()  # the first `slots` hold turns
        self._numbers = itertools.count()

    @property
    def waiting(self) -> int:
        with self._cond:
            return max(0, len(self._tickets) - self.slots)

    def turn(self) -> Iterator[Wait | Turn]:
        """Yields Wait every `poll_s` until it is this caller's turn, then a Turn, and holds the turn
        until the generator resumes past the Turn or is closed: use it as
        `for x in q.turn(): if isinstance(x, Turn): <work>` and do the work inside the loop body."""
        start = time.monotonic()
        with self._cond:
            if len(self._tickets) - self.slots >= self.max_waiting:
                raise Busy(f"The server is busy ({len(self._tickets) - self.slots} runs waiting, limit "
                           f"{self.max_waiting}); try again in a few seconds.")
            ticket = next(self._numbers)
            self._tickets.append(ticket)
        try:
            while True:
                with self._cond:
                    place = self._tickets.index(ticket)
                    if place < self.slots:
                        behind = max(0, len(self._tickets) - self.slots)
                        break
                    ahead = place - self.slots + 1  # the runs being timed count as one ahead: the next to end
                    self._cond.wait(self.poll_s)
                    if self._tickets.index(ticket) < self.slots:
                        continue
                yield Wait(ahead, time.monotonic() - start)
            # The longer the queue, the shorter each timing (down to a quarter), so the last in line waits seconds,
            # not minutes; the spread the shorter timing has is shown with it.
            scale = 1.0 if behind < self.load_at else max(MIN_BUDGET_SCALE, self.load_at / (2 * behind))
            yield Turn(time.monotonic() - start, behind, scale)
        finally:  # done, failed, or abandoned while waiting: give the place up either way
            with self._cond:
                self._tickets.remove(ticket)
                self._cond.notify_all()


QUEUE = MeasureQueue()
STATUS_EVERY_S = 2.0


def _waiting(steps: Iterator[Wait | Turn]) -> Generator[Progress, None, Turn]:
    """Waiting messages until the turn comes; returns it. Said once the wait passes STATUS_EVERY_S, then as often:
    each message is work for the server's one core (with thirty waiting, saying every change of place was a hundred
    a second), and the graph's own status already says that the timings wait their turn."""
    shown = 0.0
    while not isinstance(step := next(steps), Turn):
        if step.waited_s - shown >= STATUS_EVERY_S:
            shown = step.waited_s
            yield Progress(step.waited_s, f"Waiting for the measurement queue: {step.ahead} run(s) ahead, "
                                          f"{step.waited_s:.0f} s…")
    return step


def queued(work: Callable[[Turn], Generator[Progress, None, R]]) -> Generator[Progress, None, R]:
    """Run `work(turn)` in its turn of the server-wide measurement queue: yields waiting messages until then, then
    `work`'s own messages, and returns what `work` returns. The turn is given up as soon as `work` returns (or
    fails, or is abandoned), before the caller has shown anything of the result: the next run starts on the
    measuring core while this one's view is still being built and sent."""
    try:
        with closing(QUEUE.turn()) as steps:
            turn = yield from _waiting(steps)
            return (yield from work(turn))
    finally:
        release_free_memory()
