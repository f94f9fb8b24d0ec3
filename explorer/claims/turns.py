"""Whose experiment runs next on the claims' board: one experiment asked for by a person at a time (two at once
would share the cores each measures), and a room's teacher waiting goes before every visitor waiting: a class waits
on the teacher's run, a visitor of the Claims tab a run longer. The background's runs (the start-up warm-up, keeping
results fresh) take no turn: their workers run at idle priority and yield the cores to a person's run anyway, and a
person's click never waits for them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum


class Turn(Enum):
    FIRST = "a room's teacher"  # ahead of every visitor waiting
    VISITOR = "a visitor"  # in the order they came
    BACKGROUND = "the server's own"  # takes no turn


class Turns:
    """The turn to run an experiment: held by one at a time; given next to a FIRST in line, if any."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holder: str | None = None  # the claim whose experiment has the turn
        self._first_in_line = 0

    @contextmanager
    def line(self, turn: Turn) -> Iterator[Callable[[str, float], bool]]:
        """In line for the turn (a FIRST ahead of every visitor until it leaves the line): gives `take(claim_id,
        timeout_s)`, whether that claim's experiment now holds the turn (False: `timeout_s` passed; ask again)."""
        first = turn is Turn.FIRST
        with self._cond:
            self._first_in_line += first
        try:
            yield lambda claim_id, timeout_s: self._take(claim_id, first, timeout_s)
        finally:
            with self._cond:
                self._first_in_line -= first
                self._cond.notify_all()  # a visitor waiting behind it

    def _take(self, claim_id: str, first: bool, timeout_s: float) -> bool:
        with self._cond:
            if not self._cond.wait_for(lambda: self._holder is None and (first or not self._first_in_line),
                                       timeout_s):
                return False
            self._holder = claim_id
            return True

    def give(self) -> None:
        """The experiment holding the turn is over."""
        with self._cond:
            self._holder = None
            self._cond.notify_all()

    @property
    def holder(self) -> str | None:
        """The claim whose experiment holds the turn now."""
        return self._holder
