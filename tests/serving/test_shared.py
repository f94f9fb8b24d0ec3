"""What sessions share: deterministic results computed once, recent timings reused (and said), one measurement of
an input at a time, the measurement processes, and the time bound of one run."""

import gc
import os
import threading
import time
from dataclasses import dataclass, replace

import pytest

from explorer.core.progress import Progress
from explorer.eager.capture import Capture, capture_run, train_loss
from explorer.eager.memory import measure_peaks
from explorer.runs.session import Session
from explorer.serving.plan import plan
from explorer.serving.pool import MeasurePool, Timed, TimingJob
from explorer.serving.shared import RecentTimings, Sourced, run_key
from explorer.serving.timings import InProcess, timings
from explorer.views.playground import GraphFirst, View, update
from explorer.workers.protocol import Job, WorkerContext, WorkerFailure
from models import ZOO, build_model, make_config

TEXT = "(the cat) (sat down) on it."  # a bracketed sentence: the tree model's parse


@pytest.mark.parametrize("name", list(ZOO))
def test_the_graph_saved_bytes_and_memory_depend_only_on_model_config_and_text(name):
    config = make_config(name)
    runs = []
    for _ in range(2):  # two builds, as two sessions (or a rebuilt, evicted model) would make
        model = build_model(name, config)
        ids = Session(name).capture(TEXT).input.ids
        c = capture_run(model, ids)
        runs.append((c.graph.summary(), c.trace, c.saved_bytes, measure_peaks(model, ids, train_loss)))
    assert runs[0] == runs[1]


def test_a_second_session_running_the_same_input_gets_the_cached_graph_without_building_the_model():
    text = "a sentence only this test runs"
    first = Session("transformer")
    a = first.capture(text)
    second = Session("transformer")
    b = second.capture(text)
    assert b.fixed is a.fixed and not second.holds_model  # nothing rebuilt, nothing re-run
    # Profiled whatever the machine's load (a slow capture plans no profile): this test is about the sharing.
    profiled = replace(plan(a.capture), profile=True).scaled(0.05)
    timed = next(t for t in InProcess().run(first.job(a, profiled)) if isinstance(t, Timed))
    assert first.time_run(a, Sourced(timed)).memory is not None
    assert second.job(b, plan(b.capture)).profile is False  # measured once: not profiled again
    r = second.time_run(b, budget_scale=0.05)
    assert r.memory is not None and r.memory == a.fixed.memory  # the profile was shared too, planned or not
    assert Session("transformer", make_config("transformer", {"layers": 3})).capture(text).fixed is not a.fixed


def test_a_class_opening_one_link_at_once_captures_its_graph_once():
    sessions = [Session("early_exit") for _ in range(10)]
    found = []
    threads = [threading.Thread(target=lambda s=s: found.append(s.capture("the link everyone opens").fixed))
               for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 10 and all(f is found[0] for f in found)
    assert sum(s.holds_model for s in sessions) == 1  # one built the model and captured; nine waited for it


class _Counting:
    """The in-process timer, counting the measurements it makes (and slow enough for others to arrive)."""

    def __init__(self) -> None:
        self.inner, self.runs, self.started = InProcess(), 0, threading.Event()

    def run(self, job):
        self.runs += 1
        self.started.set()
        yield from self.inner.run(job)


def _job(text="shared by a class"):
    s = Session()
    c = s.capture(text)
    return c.key, lambda turn: s.job(c, plan(c.capture).scaled(0.5))


def test_thirty_requests_for_one_input_make_one_measurement_and_say_the_rest_were_reused():
    key, job = _job()
    recent, timer, results = RecentTimings(8, 60.0), _Counting(), []

    def request() -> None:
        *_, got = timings(key, job, timer, recent=recent)
        results.append(got)

    threads = [threading.Thread(target=request) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert timer.runs == 1 and len(results) == 30
    assert sum(not r.reused for r in results) == 1
    assert {r.timed for r in results} == {results[0].timed}  # the same figures, labelled as reused
    assert all("reused" in r.label() for r in results if r.reused)


def test_a_fresh_request_measures_again_and_an_old_timing_is_not_reused():
    key, job = _job("measured twice")
    recent, timer = RecentTimings(8, 60.0), _Counting()
    list(timings(key, job, timer, recent=recent))
    *_, again = timings(key, job, timer, fresh=True, recent=recent)
    assert timer.runs == 2 and not again.reused
    stale = RecentTimings(8, max_age_s=0.0)
    list(timings(key, job, timer, recent=stale))
    *_, later = timings(key, job, timer, recent=stale)
    assert timer.runs == 4 and not later.reused


def test_the_measurement_turn_ends_when_the_timings_arrive_not_when_the_caller_has_shown_them():
    recent = RecentTimings(8, 60.0)
    first = timings(*_job("shown slowly"), InProcess(), recent=recent)
    got = next(s for s in first if isinstance(s, Sourced))  # its caller now builds and sends the view: slowly
    second = threading.Thread(target=lambda: list(timings(*_job("timed meanwhile"), InProcess(), recent=recent)))
    second.start()
    second.join(timeout=60)
    assert not second.is_alive() and not got.reused  # the next run was timed while the first was still held
    first.close()


class _Paced:
    """The in-process timer, saying each phase `gap_s` apart before its timings."""

    def __init__(self, gap_s: float) -> None:
        self.gap_s = gap_s

    def run(self, job):
        start = time.monotonic()
        for phase in ("timing forward", "timing the train step", "profiling memory"):
            yield Progress(time.monotonic() - start, phase)
            time.sleep(self.gap_s)
        yield from InProcess().run(job)


def test_a_long_measurement_says_what_it_is_doing_and_how_far_and_a_short_one_says_nothing(monkeypatch):
    monkeypatch.setattr("explorer.serving.timings.STATUS_EVERY_S", 0.2)
    key, job = _job("paced")
    said = [s.phase for s in timings(key, job, _Paced(0.3), fresh=True, estimate_s=3.0) if isinstance(s, Progress)]
    # from STATUS_EVERY_S on, each phase as it comes (the first came at once: nothing said yet)
    assert [s.split(",")[0] for s in said] == ["Measuring: timing the train step", "Measuring: profiling memory"]
    assert said[-1] == "Measuring: profiling memory, 1 s of about 3 s…"  # 0.6 s in
    quick = [s.phase for s in timings(key, job, _Paced(0.0), fresh=True) if isinstance(s, Progress)]
    assert quick == []  # between its graph and its figures a short run sends the server's core no message


@dataclass(frozen=True)
class FrozenObjects(Job[int]):
    """How many objects the process running it keeps out of the cycle collector's walks."""

    def run(self, ctx: WorkerContext) -> int:
        return gc.get_freeze_count()


def test_a_measurement_process_times_on_its_own_pinned_core_and_a_killed_one_is_replaced_with_a_message():
    pool = MeasurePool()
    s = Session()
    c = s.capture("timed in another process")
    job = s.job(c, plan(c.capture).scaled(0.2))
    try:
        *_, timed = pool.run(job)
        assert isinstance(timed, Timed) and timed.forward.runs >= 3 and timed.node
        worker = next(iter(pool._workers.values()))
        assert os.sched_getaffinity(worker.pid) == set(timed.forward.cores)  # pinned: nothing else of ours there
        # its start-up (torch and the rest: bench/RESULTS-gc.md) frozen, so the memory profile's collection is short
        *_, frozen = worker.run(FrozenObjects())
        assert frozen > 100_000
        os.kill(worker.pid, 9)  # the process dies between jobs, or during one: a message, a new process, the figures
        steps = list(pool.run(job))
        assert any("Retrying" in getattr(p, "phase", "") for p in steps[:-1]) and isinstance(steps[-1], Timed)
        assert steps[-1].retried.startswith("Measured on a second try: the measurement (core")  # said with them
    finally:
        pool.stop()


def test_a_run_too_long_for_the_limit_is_shortened_and_then_not_timed():
    quick = Capture(graph=None, trace={}, saved_bytes=0, forward_s=0.001)  # type: ignore[arg-type]
    assert plan(quick).timed and not plan(quick).shortened and plan(quick).profile
    slow = Capture(graph=None, trace={}, saved_bytes=0, forward_s=0.5)  # a train step: 1.5 s at most  # type: ignore[arg-type]
    short = plan(slow, max_s=5.0)
    assert short.timed and short.shortened and not short.profile and "Shortened" in short.note
    refused = plan(slow, max_s=3.0)
    assert not refused.timed and "Not timed" in refused.note and "GE_MAX_RUN_S = 3" in refused.note


def test_one_preempted_probe_does_not_refuse_an_architectures_long_inputs(monkeypatch):
    """A probe's train step stalled for a second (seen: 0.85 s of a 0.03 s step, two torch threads beside another
    busy process) would be kept for the architecture and refuse its long inputs; the fastest probe is kept."""
    import explorer.serving.plan as planning

    stalls = iter([False, True])  # the warm-up, then the first timed probe
    real = planning.train_step

    def stalled_once(model, ids):
        if next(stalls, False):
            time.sleep(1.0)
        return real(model, ids)

    model, ids = build_model("rnn", make_config("rnn")), Session("rnn").capture("word " * 60).input.ids
    monkeypatch.setattr(planning, "train_step", stalled_once)
    monkeypatch.setattr(planning, "_per_token", {})
    planning.check_capture("a probe-test architecture", model, ids, max_s=1.0)  # not refused
    assert planning._per_token["a probe-test architecture"] < 0.5 / ids.shape[1]
    monkeypatch.setattr(planning, "_per_token", {})
    with pytest.raises(Exception, match="over GE_MAX_RUN_S"):
        planning.check_capture("a probe-test architecture", model, ids, max_s=1e-6)  # a real refusal still refuses


def test_a_refused_run_still_shows_its_graph_and_counts_and_says_why(monkeypatch):
    monkeypatch.setattr("explorer.runs.playground.plan", lambda capture: plan(capture, max_s=1e-6))
    steps = list(update(Session(), "rnn", "too long for this limit", "", {}))
    assert isinstance(steps[-1], GraphFirst) and not any(isinstance(s, View) for s in steps)
    assert "Not timed" in steps[-1].status and ("forward", "…", "not timed") in steps[-1].cards


def test_the_first_view_has_the_counts_and_the_timings_follow():
    steps = list(update(Session(), "tree", "(a b) (c d) e", "", {}))
    first = steps[0]
    assert isinstance(first, GraphFirst)
    cards = {label: (value, detail) for label, value, detail in first.cards}
    assert cards["tokens"][0] == "13" and cards["forward"] == ("…", "queued for timing…")
    assert isinstance(steps[-1], View) and "ms" in dict((k, v) for k, v, _ in steps[-1].cards)["forward"]


def test_run_keys_tell_configs_and_texts_apart():
    a = run_key("rnn", make_config("rnn"), "x")
    assert a == run_key("rnn", make_config("rnn"), "x")
    assert a != run_key("rnn", make_config("rnn", {"hidden": 32}), "x") != run_key("rnn", make_config("rnn"), "y")
    assert TimingJob.of("rnn", {"hidden": 8}, Session().capture("ab").input.ids, 0.1, 0.1).ids == (97, 98)


def test_a_failed_measurement_is_said_and_frees_its_input():
    class Broken:
        def run(self, job):
            raise WorkerFailure("the measurement (core 0) worker died while timing forward; it has been restarted.")
            yield

    key, job = _job("fails")
    recent = RecentTimings(8, 60.0)
    with pytest.raises(WorkerFailure, match="died"):
        list(timings(key, job, Broken(), recent=recent))
    # and the input is free again: the next request measures instead of waiting forever for the failed one
    *_, ok = timings(key, job, InProcess(), recent=recent)
    assert isinstance(ok, Sourced) and not ok.reused


def test_a_sessions_own_earlier_timing_reused_is_said_to_be_its_own():
    text, mine = "my own words, again", Session()
    list(update(mine, "rnn", text, "", {}))
    list(update(mine, "rnn", text + "!", "", {}))
    *_, back = update(mine, "rnn", text, "", {})  # back to the first text: its timing, reused
    assert "measured" in back.report["eager"]["timing_note"] and "for this session's earlier run" in \
        back.report["eager"]["timing_note"]
    *_, theirs = update(Session(), "rnn", text, "", {})
    assert "for another session" in theirs.report["eager"]["timing_note"]


def test_measure_again_reruns_an_unchanged_input_with_fresh_timings_where_another_session_reuses_them():
    text = "measure this again"
    first, second = Session(), Session()
    list(update(first, "rnn", text, "", {}))
    *_, reused = update(second, "rnn", text, "", {})
    assert isinstance(reused, View) and reused.report["eager"]["timing_note"].startswith("Timings reused")
    assert list(update(second, "rnn", text, "", {}))[-1].phase.startswith("Run 1 is this input")
    *_, fresh = update(second, "rnn", text, "", {}, fresh=True)
    assert isinstance(fresh, View) and fresh.report["eager"]["timing_note"] is None
    assert fresh.report["run"] == reused.report["run"] + 1
