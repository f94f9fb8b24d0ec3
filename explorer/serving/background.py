"""Work nobody is waiting for (the start-up warm-up: inductor's caches, then every claim) yields to visitors. Two ways.
Its worker processes run at the lowest scheduling priority Linux offers (SCHED_IDLE: a thread of that policy gets a
core only when no other thread wants it), so a visitor's capture, timing or compile on the same cores takes them at
once; they are twins of the visitors' workers (`WorkerProcess.idle_twin`), so the visitors' own keep their priority
and never queue behind the warm-up (`explorer.api.background_workers`). And between its steps the warm-up waits while
any visitor's run is in progress (`visitor`, around the Playground's runs and compiles) or waiting for the measuring
core, and for a moment after, so that a class typing keeps the machine."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from explorer.serving.queueing import QUEUE

QUIET_S = 2.0  # how long no visitor ran before a background step starts (a typing student pauses 0.5-2 s)
_changed = threading.Condition()
_running = 0
_last_end = 0.0


@contextmanager
def visitor() -> Iterator[None]:
    """Around a visitor's run: background steps wait while it runs."""
    global _running, _last_end
    with _changed:
        _running += 1
    try:
        yield
    finally:
        with _changed:
            _running -= 1
            _last_end = time.monotonic()
            _changed.notify_all()


def busy() -> bool:
    """A visitor's run in progress, waiting for the measuring core, or ended less than QUIET_S ago."""
    return _running > 0 or QUEUE.waiting > 0 or time.monotonic() - _last_end < QUIET_S


def wait_for_visitors(poll_s: float = 0.5) -> float:
    """Block while `busy()`; returns the seconds waited."""
    start = time.monotonic()
    with _changed:
        while busy():
            _changed.wait(poll_s)
    return time.monotonic() - start
