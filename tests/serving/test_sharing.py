"""Many users on one server: the measurement queue, bounded model memory, separate sessions."""

import threading
import time
from copy import deepcopy
from dataclasses import replace

import pytest
import torch

from explorer.core.limits import PROFILE_QUEUE
from explorer.eager.capture import train_loss
from explorer.eager.memory import measure_peaks
from explorer.runs.session import Session
from explorer.serving.plan import plan
from explorer.serving.pool import Timed
from explorer.serving.queueing import QUEUE, Busy, MeasureQueue, Turn, Wait
from explorer.serving.residency import Residency
from explorer.serving.shared import Sourced
from explorer.serving.timings import InProcess
from explorer.views.playground import GraphFirst, View, update


def _take_turn(q, log, name, hold_s=0.2):
    for step in q.turn():
        if isinstance(step, Turn):
            log.append((name, "start", time.monotonic()))
            time.sleep(hold_s)
            log.append((name, "end", time.monotonic()))


def test_queue_runs_one_at_a_time_first_come_first_served():
    q, log = MeasureQueue(max_waiting=10, poll_s=0.05, slots=1), []
    threads = []
    for i in range(4):
        threads.append(threading.Thread(target=_take_turn, args=(q, log, i)))
        threads[-1].start()
        time.sleep(0.03)  # arrive in order
    for t in threads:
        t.join()
    assert [name for name, what, _ in log if what == "start"] == [0, 1, 2, 3]
    ends = [t for _, what, t in sorted(log, key=lambda x: x[2]) if what == "end"]
    starts = [t for _, what, t in sorted(log, key=lambda x: x[2]) if what == "start"]
    assert all(s >= e for s, e in zip(starts[1:], ends[:-1], strict=True))  # never two at once
    assert q.waiting == 0


def test_waiters_see_their_place_and_a_full_queue_says_busy():
    q = MeasureQueue(max_waiting=1, load_at=1, poll_s=0.05, slots=1)
    first = q.turn()
    assert isinstance(next(first), Turn)  # holds the turn
    second = q.turn()
    wait = next(second)
    assert isinstance(wait, Wait) and wait.ahead == 1
    with pytest.raises(Busy, match=r"busy.*try again"):
        next(q.turn())
    first.close()  # done: the next in line gets it, told it ran under load if many wait
    turn = next(second)
    assert isinstance(turn, Turn) and turn.waited_s > 0
    second.close()
    assert q.waiting == 0


def test_with_two_measuring_cores_two_runs_are_timed_at_once_and_the_third_waits():
    q = MeasureQueue(max_waiting=5, poll_s=0.05, slots=2)
    a, b, c = q.turn(), q.turn(), q.turn()
    assert isinstance(next(a), Turn) and isinstance(next(b), Turn)
    wait = next(c)
    assert isinstance(wait, Wait) and wait.ahead == 1 and q.waiting == 1
    b.close()  # either one ending frees a core for the next in line
    assert isinstance(next(c), Turn)
    a.close()
    c.close()
    assert q.waiting == 0


def test_an_abandoned_waiter_gives_up_its_place():
    q = MeasureQueue(max_waiting=5, poll_s=0.05, slots=1)
    holder = q.turn()
    next(holder)
    waiter = q.turn()
    assert isinstance(next(waiter), Wait)
    waiter.close()  # the tab closed while waiting
    assert q.waiting == 0
    holder.close()
    assert isinstance(next(q.turn()), Turn)


def test_under_load_the_budget_shrinks_and_the_notice_says_so():
    turn = Turn(waited_s=3.2, queued_behind=5, budget_scale=0.5)
    assert "Waited 3.2 s" in turn.notice() and "cut to 50%" in turn.notice()
    assert Turn(0.0, 0, 1.0).notice() is None
    assert turn.profiles and "memory" not in turn.notice()  # 5 waiting: the profile still runs
    long = Turn(waited_s=9.0, queued_behind=PROFILE_QUEUE, budget_scale=0.25)
    assert not long.profiles and "memory" not in long.notice()


def test_with_a_long_queue_a_run_is_timed_without_a_new_memory_profile_and_profiled_when_it_is_shorter():
    """A profile keeps the measuring core several times longer than the cut timings: in a long queue it waits."""
    s = Session("rnn")
    c = s.capture("profiled only when the queue is short")
    planned = replace(plan(c.capture), profile=True)
    long, loaded = Turn(9.0, PROFILE_QUEUE, 0.25), Turn(1.0, PROFILE_QUEUE - 1, 0.5)
    assert not s.job(c, planned.in_turn(long)).profile
    assert s.job(c, planned.in_turn(loaded)).profile and s.job(c, planned.in_turn(loaded)).forward_s == (
        planned.forward_s / 2)
    assert s.job(c, planned.in_turn(Turn(0.0, 0, 1.0))).profile
    # the status says why exactly when the input has no peaks: not when another run had profiled it
    timed = next(t for t in InProcess().run(s.job(c, planned.in_turn(long).scaled(0.1))) if isinstance(t, Timed))
    unprofiled = s.time_run(c, Sourced(timed, unprofiled=True))
    assert unprofiled.memory is None and "No memory profile" in unprofiled.timing_note
    c.fixed.memory = measure_peaks(s.model, c.input.ids, train_loss)
    assert "No memory profile" not in (s.time_run(c, Sourced(timed, unprofiled=True)).timing_note or "")


class _Fake:
    def __init__(self, name):
        self.id, self.model, self.released = name, object(), False

    def release_model(self):
        self.model = None

    def release(self):
        self.model, self.released = None, True


def test_residency_evicts_the_least_recently_used_and_frees_closed_tabs():
    r = Residency(capacity=2)
    a, b, c = _Fake("a"), _Fake("b"), _Fake("c")
    for s in (a, b):
        r.touch(s)
    r.touch(a)  # a used again: b is now the oldest
    r.touch(c)
    assert b.model is None and a.model is not None and c.model is not None and r.live_models == 2
    r.attach("tab-1", c)
    assert r.close("tab-1") and c.released and not r.close("tab-1")


def test_an_evicted_session_rebuilds_the_same_model():
    residency = Residency(capacity=1)
    s = Session(residency=residency)
    first = s.run("hello there")
    weights = {k: v.clone() for k, v in s.model.state_dict().items()}
    s.release_model()
    again = s.run("hello there")
    assert len(again.capture.graph.nodes) == len(first.capture.graph.nodes)
    assert all(torch.equal(v, weights[k]) for k, v in s.model.state_dict().items())
    assert residency.live_models == 1
    other = Session(residency=residency)
    other.run("another session")  # over capacity: the first session's model is evicted
    assert residency.live_models == 1 and not s.holds_model and other.holds_model


def test_concurrent_sessions_changing_architectures_never_mix():
    errors, sessions = [], []

    def user(i):
        s = Session()
        sessions.append(s)
        try:
            for k in range(3):
                width = 8 * (i + 1) + 8 * k
                s.configure("transformer", {"width": width, "heads": 1, "layers": 1 + (i % 2)})
                r = s.run("x" * (5 + i * 7 + k))
                assert r.config.width == width and r.tokens == 5 + i * 7 + k
                assert all(rec.arch == r.arch or rec.number < r.number for rec in s.history)
        except Exception as e:  # collected: assertion errors in threads would vanish otherwise
            errors.append(e)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for s in sessions:
        assert len(s.history) == 3 and len({rec.tokens for rec in s.history}) == 3
    assert len({s.id for s in sessions}) == 4


def test_a_session_copied_from_its_factory_shares_the_servers_residency():
    residency = Residency(capacity=2)
    copy = deepcopy(Session(residency=residency))  # what Gradio's State does with a factory's value
    assert copy.residency is residency


def test_the_graph_is_drawn_while_another_run_holds_the_measurement_queue():
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another session's run being timed
        for step in QUEUE.turn():
            if isinstance(step, Turn):
                held.set()
                release.wait(30)

    other = threading.Thread(target=hold)
    other.start()
    assert held.wait(10)
    items = update(Session(), "rnn", "hello there", "", {})
    try:
        first = next(items)
        assert isinstance(first, GraphFirst) and "11 tokens" in first.graph.layout.title.text
        assert next(items).phase.startswith("Waiting for the measurement queue: 1 run(s) ahead")
    finally:
        release.set()
        other.join()
    rest = list(items)  # once the queue is free, the timings and the memory follow
    assert isinstance(rest[-1], View) and rest[-1].report["memory"] is not None
