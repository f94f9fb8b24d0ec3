"""The launcher: every way a rank can end is reported as what it was, and nothing is left behind (processes,
listening ports, files), whether the ranks finish, raise, abort, hang past the wall-clock limit, or the worker
running them is cancelled."""

import os
import signal
import tempfile
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.labs.ddp.lab import ddp_setup, run_ddp
from explorer.labs.ddp.results import ALLREDUCE
from explorer.labs.ddp.world import launch
from explorer.workers.process import WorkerProcess
from models import make_config
from tests.helpers import cmdline, descendants, kept_by_this_process, marked, parent_of

pytestmark = pytest.mark.slow


def _descendants(pid: int) -> set[int]:
    # multiprocessing's resource tracker and fork server, kept until this process exits; and the browser a browser
    # test of the same test process keeps open (Chromium starts helper processes at any time)
    return {p for p in descendants(pid) if not kept_by_this_process(p) and not any(
        word in cmdline(p) for word in (b"chromium", b"playwright"))}


def _listening() -> set[str]:
    """The listening TCP sockets this process holds (its ranks are checked as processes): other tests, in other
    workers, open ports of their own meanwhile."""
    listening = {ln.split()[9] for name in ("tcp", "tcp6")
                 for ln in Path(f"/proc/net/{name}").read_text().splitlines()[1:] if ln.split()[3] == "0A"}
    held = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            held.add(target[8:-1])
    return listening & held


@pytest.fixture
def nothing_left(tmp_path, monkeypatch):
    """No process, listening socket or file of the run is left: temporary files go to this test's own directory
    (in this process and in every process it starts), which must be empty again afterwards."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    before = (_descendants(os.getpid()), _listening())
    yield
    deadline = time.monotonic() + 10
    while _descendants(os.getpid()) - before[0] and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _descendants(os.getpid()) - before[0]
    assert left == set(), [(p, cmdline(p)[:200]) for p in left]
    assert _listening() - before[1] == set()
    # (but this process's multiprocessing directory, kept until it exits, made here if its fork server started here)
    assert [p for p in tmp_path.iterdir() if not p.name.startswith("pymp-")] == []


def _ends_each_way(ctx, mode: str) -> None:
    t = torch.ones(2)
    start = time.perf_counter()
    dist.all_reduce(t)
    ctx.record(ALLREDUCE, start)
    ctx.report.values["sum"] = t.tolist()
    if ctx.rank == 0:
        raise ValueError("rank 0 gives up")
    if mode == "abort":
        os.abort()
    time.sleep(3600)


def test_a_raise_an_abort_and_a_hang_past_the_limit_are_each_reported_as_such(nothing_left):
    aborted = launch("abort", _ends_each_way, ("abort",), 2, pg_timeout_s=2, wall_s=60)
    raised, died = aborted.ranks
    assert raised.state == "error" and raised.report.error == "ValueError: rank 0 gives up"
    assert raised.report.values["sum"] == [2.0, 2.0]  # the all-reduce really ran over gloo
    assert raised.report.segments[0].kind == ALLREDUCE
    assert died.state == "killed by SIGABRT (no Python exception)" and died.signal == "SIGABRT"
    assert died.report is None  # it died before it could say anything: the launcher says it
    hung = launch("hang", _ends_each_way, ("hang",), 2, pg_timeout_s=2, wall_s=15)
    assert hung.ranks[1].state == "killed at the wall-clock limit" and 15 <= hung.wall_s < 40
    assert hung.ranks[0].state == "error"


def test_a_cancelled_run_stops_its_worker_and_every_rank(nothing_left):
    service = WorkerProcess(timeout_s=120, name="distributed run", starts_processes=True)
    setup = ddp_setup("uneven", "rnn", make_config("rnn"), 2)
    seen = []
    try:
        with pytest.raises(InputError, match="cancelled"):
            for item in run_ddp(service, "uneven", setup):
                seen.append(item)
                # the ranks are training: cancel, as closing the page does
                if isinstance(item, Progress) and "rank 0: batch" in item.phase:
                    pid = service.pid
                    service.cancel()
        assert pid is not None and not Path(f"/proc/{pid}").exists()  # stopped and reaped
    finally:
        service.stop()


def test_a_scenario_past_the_workers_timeout_is_said_and_leaves_nothing(nothing_left):
    service = WorkerProcess(timeout_s=4, name="distributed run", advice="Try another scenario.",
                             starts_processes=True)
    try:
        with pytest.raises(InputError, match=r"distributed run timed out after 4 s.*Try another scenario"):
            list(run_ddp(service, "uneven", ddp_setup("uneven", "rnn", make_config("rnn"), 2)))
    finally:
        service.stop()


def test_a_worker_killed_while_its_ranks_import_leaves_no_rank_and_no_file(nothing_left, monkeypatch):
    mark = f"GE_TEST_MARK=killed-launcher-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv(*mark.split("="))  # inherited by the worker and its ranks
    service = WorkerProcess(timeout_s=120, name="distributed run", starts_processes=True)
    try:
        with pytest.raises(InputError, match="distributed run worker died"):
            for _ in run_ddp(service, "uneven", ddp_setup("uneven", "rnn", make_config("rnn"), 2)):
                # the ranks: children of the worker's fork server, itself the worker's child
                ranks = [p for p in descendants(service.pid) if parent_of(p) != service.pid] if service.pid else []
                if len(ranks) >= 2:  # started, still importing the engine: killed now
                    os.kill(service.pid, signal.SIGKILL)
        # The ranks gone within the 5 s (each waits on the worker's pidfd: ~0.05 s here, not after their
        # imports); the worker's fork server, which runs nothing, ends by itself once its client's pipe closes (the
        # stdlib's way: about a second, its interpreter's exit with torch loaded)
        deadline = time.monotonic() + 5
        while set(ranks) & marked(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(ranks) & marked(mark) == set(), [(p, cmdline(p)) for p in marked(mark)]
        deadline = time.monotonic() + 15
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marked(mark) == set(), [(p, cmdline(p)) for p in marked(mark)]
    finally:
        service.stop()


@pytest.mark.parametrize(("args", "message"), [
    (("nope", "rnn", 2), "unknown scenario 'nope'"),
    (("unused", "rnn", 2), "runs on early_exit, not rnn"),
    (("uneven", "rnn", 1), "number of processes must be 2.."),
    (("uneven", "rnn", 64), "number of processes must be 2.."),
    (("uneven", "rnn", 2, 1), "steps must be 2..20"),
    (("compiled", "rnn", 2, 6, "tvm"), "backend must be one of"),
])
def test_bad_choices_are_refused_before_any_process_starts(args, message):
    scenario, model, world, *rest = args
    with pytest.raises(InputError, match=message):
        ddp_setup(scenario, model, make_config(model), world, *rest)


def test_its_endpoint_keeps_its_parameters_and_their_order():
    """The HTTP API as documented (docs/cli.md): the names and their order are a promise to callers."""
    from explorer.api import endpoint_parameters
    from explorer.labs.registry import LABS

    assert [p.name for p in endpoint_parameters(LABS["ddp"])] == [
        "scenario", "model", "config_json", "world_size", "steps", "backend"]
