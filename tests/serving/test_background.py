"""Background work yields to visitors: its workers run at SCHED_IDLE (twins of the visitors', which keep their
priority), and a background step waits while a visitor's run is in progress, then for a quiet moment."""

import os
import threading

from explorer.serving import background
from explorer.serving.background import visitor, wait_for_visitors
from explorer.workers.process import WorkerProcess


def test_an_idle_twin_runs_at_the_lowest_priority_and_its_original_does_not():
    original = WorkerProcess(name="visitors")
    twin = original.idle_twin()
    try:
        original.start()
        twin.start()
        assert os.sched_getscheduler(twin.pid) == os.SCHED_IDLE
        assert os.sched_getscheduler(original.pid) == os.SCHED_OTHER
        assert (twin.timeout_s, twin.max_jobs) == (original.timeout_s, original.max_jobs)
    finally:
        original.stop()
        twin.stop()


def test_a_background_step_waits_for_a_visitors_run_and_a_quiet_moment_after(monkeypatch):
    monkeypatch.setattr(background, "QUIET_S", 0.2)
    order = []
    entered, release = threading.Event(), threading.Event()

    def run():
        with visitor():
            entered.set()
            release.wait(5)
            order.append("visitor done")

    t = threading.Thread(target=run)
    t.start()
    entered.wait(5)
    waiter = threading.Thread(target=lambda: (wait_for_visitors(poll_s=0.05), order.append("background step")))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and order == []  # held while the visitor runs
    release.set()
    t.join(5)
    waiter.join(5)
    assert order == ["visitor done", "background step"]
