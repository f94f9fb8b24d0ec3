"""A worker process on its own: timed out, stopped and replaced, whatever job it runs."""

import os
import signal
import time

import pytest

from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun, CompileTrack
from explorer.core.progress import Progress
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import WorkerFailure
from models.tokenizer import encode


def _compiled(service: WorkerProcess, model: str, config: dict, length: int) -> CompiledRun:
    track = CompileTrack("worker")
    *_, run = (r for r in track.run(service, model, config, model, CompileOptions("eager"), [encode("x" * length)])
               if isinstance(r, CompiledRun))
    return run


def test_timeout_stops_the_worker_and_the_next_job_runs():
    svc = WorkerProcess(timeout_s=2)
    try:
        start = time.monotonic()
        with pytest.raises(WorkerFailure, match="timed out after 2 s"):
            _compiled(svc, "rnn", {}, 400)
        assert time.monotonic() - start < 30
        assert not svc.alive
        svc.timeout_s = 120
        assert _compiled(svc, "transformer", {"layers": 1}, 8).compiled is not None
    finally:
        svc.stop()


def test_an_interrupt_to_the_process_group_leaves_the_worker_to_its_parent():
    """A Ctrl-C in a terminal or a Jupyter kernel's interrupt reaches every process of the group: the worker keeps
    its job and its life (its parent decides), where it printed a KeyboardInterrupt's traceback and died."""
    svc = WorkerProcess(timeout_s=120)
    try:
        _compiled(svc, "rnn", {}, 4)
        pid = svc.pid
        os.kill(pid, signal.SIGINT)
        time.sleep(0.2)
        assert _compiled(svc, "rnn", {}, 5).compiled is not None and svc.pid == pid
    finally:
        svc.stop()


def test_an_interrupt_mid_job_stops_the_worker_so_its_reply_never_reaches_the_next_job(monkeypatch):
    """A notebook's interrupt while it waits on a job (raised where it waits, in the wait for the worker's reply):
    the worker goes on (it ignores SIGINT), so it is stopped; its late reply would have been read as the next job's."""
    svc = WorkerProcess(timeout_s=120)
    try:
        job = CompileTrack("worker").run(svc, "rnn", {}, "rnn", CompileOptions("eager"), [encode("x" * 200)])
        next(item for item in job if isinstance(item, Progress))  # under way

        def interrupted(*_: object) -> bool:
            raise KeyboardInterrupt

        monkeypatch.setattr(svc._conn, "poll", interrupted)
        with pytest.raises(KeyboardInterrupt):
            next(job)
        assert not svc.alive
        monkeypatch.undo()
        assert _compiled(svc, "rnn", {}, 5).length == 5  # the next job's own answer
    finally:
        svc.stop()


def test_a_forked_worker_shares_the_fork_servers_objects_instead_of_copying_them():
    """The fork server froze what its preload made (explorer/core/preloaded.py): a worker's first collection then
    leaves the inherited pages shared. Measured: 20 MB of a worker's own written pages once ready, 105 MB when each
    inherited object's header was touched (every page copied)."""
    svc = WorkerProcess(name="measured")
    try:
        svc.start()
        with open(f"/proc/{svc.pid}/smaps_rollup") as rollup:
            private_kb = next(int(line.split()[1]) for line in rollup if line.startswith("Private_Dirty:"))
        assert private_kb < 50 * 1024, f"{private_kb / 1024:.0f} MB of the worker's pages are its own"
    finally:
        svc.stop()
