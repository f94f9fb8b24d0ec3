"""Background work yields to visitors: its workers run at SCHED_IDLE (twins of the visitors', which keep their
priority), and a background step waits while a visitor's run waits for the measuring core."""

import os
import threading

from explorer.serving.background import wait_for_visitors
from explorer.serving.queueing import MeasureQueue
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


def test_a_background_step_waits_while_a_visitors_run_waits_for_the_measuring_core(monkeypatch):
    queue = MeasureQueue(slots=1, poll_s=0.05)
    monkeypatch.setattr("explorer.serving.background.QUEUE", queue)
    seen = []
    holding, waiting = queue.turn(), queue.turn()
    next(holding)  # a visitor's timing holds the core
    next(waiting)  # another visitor's waits for it
    step = threading.Thread(target=lambda: (wait_for_visitors(poll_s=0.05), seen.append(queue.waiting)))
    step.start()
    step.join(0.3)
    assert step.is_alive() and seen == []  # held while a visitor waits
    holding.close()  # the first timing done: the waiting one takes the core, no one waits
    step.join(5)
    assert seen == [0]  # it went on once no visitor waited
    waiting.close()
