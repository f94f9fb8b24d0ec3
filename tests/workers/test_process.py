"""A worker process on its own: timed out, stopped and replaced, whatever job it runs."""

import time

import pytest

from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun, CompileTrack
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
