"""Faults: a compile that crashes, hangs or is killed, no C++ compiler, a model that raises. Each gives a
clear message, the server side keeps working, and nothing is left behind (processes, threads, temp files)."""

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from bench.appserver import connect, free_port
from explorer import server
from explorer.compile import options as compile_options
from explorer.compile.jobs import PlaygroundJob
from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun, CompileTrack
from explorer.core.errors import InputError
from explorer.core.machine import OTHER_CORES
from explorer.core.progress import Progress
from explorer.labs.batching.lab import compile_lab, eager_lab
from explorer.runs.session import Session
from explorer.sources.registry import subject
from explorer.ui.stream import streamed
from explorer.views.playground import GraphFirst, update
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import WorkerFailure
from models.rnn import UnrolledRNN
from models.tokenizer import encode
from tests.helpers import ROOT, cmdline, marked, start_app, stop_app

pytestmark = [pytest.mark.slow, pytest.mark.owns_app]  # kill -9 of its workers, SIGTERM in each phase: apps it ends


def _run(session, text):
    """The Playground's run as the page streams it (explorer/ui/playground.py): a failure is one toast line."""
    return list(streamed(update(session, "rnn", text, "", {}), lambda view: {}, "status", "Cannot run this input",
                         toast=True))


def _job(service, length=8, model="transformer", config=None):
    track = CompileTrack("faults")
    tokens = [encode("x" * length)]
    return [r for r in track.run(service, model, config or {"layers": 1, "width": 16, "heads": 2}, model,
                                 CompileOptions("eager"), tokens) if isinstance(r, CompiledRun)]


def _leftovers(before_tmp):
    """This process's children, and the new entries in its temporary directory but inductor's cache and this
    process's multiprocessing directory (its fork server's, made where the first worker started, kept until this
    process exits)."""
    new_tmp = set(os.listdir(tempfile.gettempdir())) - before_tmp
    return mp.active_children(), {f for f in new_tmp if not f.startswith(("torchinductor_", "pymp-"))}


def test_a_killed_worker_is_reported_and_replaced_and_nothing_leaks(tmp_path, monkeypatch):
    # A temporary directory of this test's own: another test process may be running a worker of its own.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before_tmp, before_threads = set(os.listdir(tempfile.gettempdir())), threading.active_count()
    svc = WorkerProcess(timeout_s=120)
    try:
        _job(svc)
        first = svc.pid
        assert os.sched_getaffinity(first) == OTHER_CORES  # compiles never share a core with a timing
        with pytest.raises(WorkerFailure, match="compile worker died"):
            for item in svc.run(PlaygroundJob("k", "rnn", {}, CompileOptions("eager"), [], [encode("y" * 400)])):
                if isinstance(item, Progress) and item.elapsed_s > 0.5:
                    os.kill(svc.pid, signal.SIGKILL)  # the worker crashes mid-compile
        runs = _job(svc)  # a fresh worker takes the next job
        assert runs[0].compiled is not None and svc.pid != first
        assert len(mp.active_children()) == 1
    finally:
        svc.stop()
    time.sleep(0.5)
    children, tmp = _leftovers(before_tmp)
    assert children == [] and tmp == set(), (children, tmp)
    assert threading.active_count() <= before_threads


def test_a_hung_compile_times_out_in_the_lab_and_the_other_strategies_still_run():
    svc = WorkerProcess(timeout_s=10)
    try:
        texts = ["x" * 400, "short"]  # pad: dynamo traces a 400-step unroll, far past 10 s; pack: a few s
        *_, run = eager_lab(subject("rnn"), texts, 32, budget_scale=0.05)
        lab = run.result
        for s in lab.strategies:  # two are enough: the one that hangs, and the one after it (each hang costs 10 s)
            s.supported = s.supported and s.name in ("pad", "pack")
        list(compile_lab(svc, run, "eager"))
        pad = lab.strategy("pad").compiled
        assert "timed out after 10 s" in pad.error
        assert lab.strategy("pack").compiled.error is None  # the next job got a fresh worker
        assert "timed out" in lab.as_dict()["strategies"][0]["compiled"]["error"]
    finally:
        svc.stop()
    assert mp.active_children() == []


def test_no_cxx_compiler_offers_aot_eager(monkeypatch):
    monkeypatch.setattr(compile_options, "cxx_compiler", lambda: None)
    svc = WorkerProcess()
    with pytest.raises(InputError, match=r"needs a C\+\+ compiler.*aot_eager"):
        list(CompileTrack("c").run(svc, "rnn", {}, "rnn", CompileOptions("inductor"), [encode("ab")]))
    *_, lab = eager_lab(subject("rnn"), ["ab", "abc"], 32, budget_scale=0.05)
    with pytest.raises(InputError, match="aot_eager"):
        list(compile_lab(svc, lab, "inductor"))
    assert not svc.alive  # refused before any worker started


def test_an_exception_inside_a_model_is_a_message_and_the_session_survives(monkeypatch):
    session = Session()
    session.configure("rnn", {})
    server.RESIDENCY.attach("test-tab", session)
    _run(session, "fine")
    assert len(session.history) == 1

    def broken(self, ids, lengths=None):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (1x3 and 5x7)")

    monkeypatch.setattr(UnrolledRNN, "forward", broken)
    session.release_model()
    # said with the graph it built up to there, not a toast: the page shows it like any graph
    shown = [item for item in update(session, "rnn", "boom", "", {}) if isinstance(item, GraphFirst)]
    assert len(shown) == 1 and shown[0].status.startswith("**The forward raised: RuntimeError: mat1 and mat2")
    monkeypatch.undo()
    session.release_model()
    _run(session, "fine again")
    assert [r.tokens for r in session.history] == [4, 10]
    assert server.RESIDENCY.close("test-tab") and session.last is None  # the tab closed: its model is freed


def _workers(mark: str, app: int) -> set[int]:
    """The app's processes still alive (its workers, their ranks), but the app and its resource tracker."""
    return {p for p in marked(mark) if p != app and b"resource_tracker" not in cmdline(p)}


def _ours(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("graph-explorer-"))


COMPILE_BOUND_S = 20  # the busy app's compile bound: well past its own (an 8-token RNN, eager backend), on a
# loaded machine too, as test_app's own app had it


def _busy_app(tmp_path: Path) -> tuple[subprocess.Popen, str, str]:
    """The real app with a private temporary directory and a short compile bound, after every kind of worker has
    served a job."""
    mark = f"faults-{os.getpid()}-{time.monotonic_ns()}"
    proc, url, _ = start_app({"TMPDIR": str(tmp_path), "GE_TEST_MARK": mark,
                              "GE_COMPILE_TIMEOUT_S": str(COMPILE_BOUND_S)})
    client = connect(url)
    client.predict("tree", "{}", "The cat sat.", "5", "jit.trace", api_name="/deploy")
    client.predict("rnn", "{}", "compiled", "", "eager", "auto", False, False, api_name="/inspect")
    return proc, url, mark  # (the multi-process worker, killed while its ranks start: tests/labs/ddp/test_world.py)


def test_a_compile_past_its_bound_and_a_kill_9_of_every_worker_leave_the_app_serving_and_a_sigterm_nothing(tmp_path):
    proc, url, mark = _busy_app(tmp_path)
    try:
        # A compile past the bound (500 unrolled steps under inductor) is stopped with a message; the next one runs.
        start = time.monotonic()
        with pytest.raises(Exception, match=f"timed out after {COMPILE_BOUND_S} s"):
            connect(url).predict("rnn", "{}", "x" * 500, "", "inductor", "auto", False, False, api_name="/inspect")
        assert time.monotonic() - start < STOPS_WITHIN_S  # a hang detector, not a speed
        assert connect(url).predict("rnn", "{}", "still here", "", "eager", "auto", False, False,
                                    api_name="/inspect")["compiled"]["forward"]["median_ms"] > 0
        workers = _workers(mark, proc.pid)
        assert len(workers) >= 3 and len(_ours(tmp_path)) >= 4  # compile, measuring, deployment; export dir
        for pid in workers:  # compile, measuring (one per measuring core), deployment: all at once
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (
                _workers(mark, proc.pid) & workers or [d for d in _ours(tmp_path) if "-compile-" in d]):
            time.sleep(0.1)
        assert _workers(mark, proc.pid) & workers == set()
        assert [d for d in _ours(tmp_path) if "-compile-" in d] == []  # the workers' own directories
        client = connect(url)
        assert client.predict("rnn", "{}", "again", "", "eager", "auto", False, False,
                              api_name="/inspect")["tokens"] == 5
        assert client.predict("tree", "{}", "The cat sat.", "5", "jit.trace", api_name="/deploy")["routes"]
        # A SIGTERM (a container's stop) ends the app as Ctrl-C does: its new workers stopped, every directory gone.
        proc.terminate()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 5
        while (_workers(mark, proc.pid) or _ours(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (_workers(mark, proc.pid), _ours(tmp_path)) == (set(), [])
    finally:
        stop_app(proc)


STOPS_WITHIN_S = 60  # a hang detector, not a speed: the hang it guards against lasted past 12 minutes


def _stopped(proc: subprocess.Popen, mark: str, tmp_path: Path, statuses=(128 + signal.SIGTERM,)) -> None:
    """SIGTERM, then the app gone with one of `statuses` (128 + SIGTERM once it handles the signal: never aborted at
    its exit, -6, as it was mid-measurement), every process it started gone, and its directories with them."""
    proc.terminate()
    assert proc.wait(timeout=STOPS_WITHIN_S) in statuses
    deadline = time.monotonic() + 10
    while (_workers(mark, proc.pid) or _ours(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (_workers(mark, proc.pid), _ours(tmp_path)) == (set(), [])


def test_a_sigterm_stops_the_app_while_it_starts(tmp_path):
    mark = f"faults-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "TMPDIR": str(tmp_path), "GE_TEST_MARK": mark, "GRADIO_SERVER_PORT": str(free_port()),
           "GE_WARM_COMPILE": "0", "GE_WARM_CLAIMS": "0", "GE_CLAIMS_FILE": ""}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)  # importing torch and gradio: before the server listens
        _stopped(proc, mark, tmp_path, (-signal.SIGTERM, 128 + signal.SIGTERM))  # (before its handler is set)
    finally:
        stop_app(proc)


def test_a_sigterm_stops_the_app_while_its_warm_up_measures_the_claims_a_lab_runs_and_a_class_waits(tmp_path):
    """The start-up warm-up measuring the claims (each claim's workers, the multi-process one among them), a
    visitor's lab running and a class's runs queued: the workers stop, the warm-up's next claim starts none, and the
    app exits."""
    mark = f"faults-{os.getpid()}-{time.monotonic_ns()}"
    proc, url, _ = start_app({"TMPDIR": str(tmp_path), "GE_TEST_MARK": mark, "GE_WARM_CLAIMS": "1",
                              "GE_QUICK_CLAIMS": "1"}, log=tmp_path / "server.log")
    try:
        deadline = time.monotonic() + 120
        while not _workers(mark, proc.pid) and time.monotonic() < deadline:  # the warm-up started its workers
            time.sleep(0.2)
        assert _workers(mark, proc.pid), "the warm-up started no worker"
        job = connect(url).submit("rnn", "{}", "The cat sat on the mat.", "5", "jit.trace,onnx", api_name="/deploy")
        # a class connected: a dozen sessions, each with a run queued or under way
        room = [connect(url).submit("rnn", "{}", f"student {i} types", "", "eager", "auto", False, False,
                                    api_name="/inspect") for i in range(12)]
        time.sleep(1)  # the lab and the class's runs under way beside the warm-up
        _stopped(proc, mark, tmp_path)
        del job, room  # their answers never come: the server went
    finally:
        stop_app(proc)


def test_once_the_app_exits_no_worker_starts_again(monkeypatch):
    """The exit stops every worker; a background job that goes on after it (the warm-up's next claim) gets a
    message instead of a new worker, which multiprocessing's own exit would otherwise wait for forever."""
    from explorer.workers import process as worker

    monkeypatch.setattr(worker, "_STOPPING", threading.Event())
    service = WorkerProcess(name="after-exit", starts_processes=True)  # not daemonic: what the exit would join
    worker.stop_every_worker()  # what atexit runs on a SIGTERM or Ctrl-C
    with pytest.raises(WorkerFailure, match="the server is stopping: the after-exit worker does not start again"):
        _job(service)
    assert service.pid is None and not mp.active_children()


def test_the_exit_stops_the_workers_before_it_removes_the_download_directory(monkeypatch):
    """A deployment worker still copying its artefact into a job directory made the directory again after its
    removal (a SIGTERM during a lab left it): the exit stops the workers first."""
    done = []
    monkeypatch.setattr(server, "stop_every_worker", lambda: done.append("workers"))
    monkeypatch.setattr(server.EXPORTS, "remove", lambda: done.append("downloads"))
    server._at_exit()
    assert done == ["workers", "downloads"]
