"""Work nobody is waiting for (the start-up warm-up: inductor's caches, then every claim) yields to visitors, two
ways. Its worker processes run at the lowest scheduling priority Linux offers (SCHED_IDLE: a thread of that policy
gets a core only when no other thread wants it), so a visitor's capture, timing or compile takes the cores at once;
they are twins of the visitors' workers (`WorkerProcess.idle_twin`, `explorer.api.background_workers`), so the
visitors' own keep their priority and never queue behind the warm-up. And before each of its steps the warm-up
waits while any visitor's run waits for the measuring core (`wait_for_visitors`): the one queue the two share."""

from __future__ import annotations

import time

from explorer.serving.queueing import QUEUE


def wait_for_visitors(poll_s: float = 0.5) -> float:
    """Block while a visitor's run waits in the measurement queue; returns the seconds waited."""
    start = time.monotonic()
    while QUEUE.waiting > 0:
        time.sleep(poll_s)
    return time.monotonic() - start
