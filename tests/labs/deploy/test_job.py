"""The deployment lab through its worker: routes in order, artefacts copied out, a hung route timed out and the
worker replaced, bad input refused before any work."""

import re
from pathlib import Path

import pytest

from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.labs.deploy.lab import run_deploy
from explorer.labs.deploy.results import LOUD, WORKS, DeployResult
from explorer.workers.process import WorkerProcess
from models import make_config

TEXT = "The cat sat on the mat."

pytestmark = pytest.mark.slow


def test_a_route_past_its_timeout_is_reported_and_the_next_runs_in_a_new_worker(tmp_path):
    service = WorkerProcess(timeout_s=1, name="deployment", advice="Leave out the slow route.")
    items = []
    try:
        for item in run_deploy(service, "transformer", make_config("transformer"), TEXT, [5],
                               ["onnx", "jit.trace"], str(tmp_path)):
            items.append(item)
            # The second route must not time out on a loaded machine: its first progress message comes at most
            # 0.5 s into it, before the 1 s limit; from then on, a generous limit (read on every poll).
            if isinstance(item, Progress) and item.phase.startswith("Route 2/2"):
                service.timeout_s = 120
    finally:
        service.stop()
    assert any(isinstance(i, Progress) and i.phase.startswith("Route 1/2, onnx:") for i in items)  # progress per route
    result = items[-1]
    assert isinstance(result, DeployResult) and not result.pending
    so_far = next(i for i in items if isinstance(i, DeployResult))  # the timed-out route row, before the next ran
    assert [r.route for r in so_far.routes] == ["onnx"] and so_far.pending == ["jit.trace"]
    assert so_far.verdict().startswith("So far, 1 of 2 routes (still to run: jit.trace)")
    onnx, trace = result.routes
    assert onnx.outcome == LOUD and "deployment timed out after 1 s" in onnx.error and "slow route" in onnx.error
    assert trace.outcome == WORKS
    assert Path(trace.artefact).parent == tmp_path and Path(trace.artefact).stat().st_size == trace.artefact_bytes


def test_bad_input_is_refused_before_the_worker_starts(tmp_path):
    service = WorkerProcess(timeout_s=30)
    with pytest.raises(InputError, match="unknown route"):
        list(run_deploy(service, "rnn", make_config("rnn"), TEXT, [5], ["jit.freeze"], str(tmp_path)))
    with pytest.raises(InputError, match="empty"):
        list(run_deploy(service, "rnn", make_config("rnn"), "", [5], ["jit.trace"], str(tmp_path)))
    assert service.pid is None


def test_the_worker_is_replaced_between_jobs_after_its_jobs_or_past_its_memory_ceiling(tmp_path):
    def deploy(service):
        *_, result = run_deploy(service, "rnn", make_config("rnn"), TEXT, [5], ["jit.trace"], str(tmp_path))
        assert result.routes[0].error == ""  # the route ran (its artefact refuses other lengths: the point)

    by_count = WorkerProcess(timeout_s=120, name="deployment", max_jobs=2)
    by_memory = WorkerProcess(timeout_s=120, name="deployment", max_rss_mb=1)  # every worker is past 1 MB
    try:
        deploy(by_count)
        first = by_count.pid
        deploy(by_count)
        assert by_count.pid is None and by_count.recycled == ["after 2 jobs"]  # replaced between jobs, not during
        deploy(by_count)
        assert by_count.pid not in (None, first)
        deploy(by_memory)
        assert by_memory.pid is None and re.fullmatch(r"at [\d,]+ MB resident, past 1 MB", by_memory.recycled[0])
    finally:
        by_count.stop()
        by_memory.stop()


def test_the_advice_for_a_model_no_route_freezes_follows_why_the_routes_failed():
    """An edit that added a decision on a tensor's value: the advice names that line and torch.cond, not the RNN's
    loop option (which cannot fix it); the RNN as shipped, whose loop specializes the length: loop=scan."""
    from explorer.labs.deploy.results import DeployResult, RouteResult

    branched = [RouteResult("export", error="GuardOnDataDependentSymNode: Could not guard on data-dependent "
                            "expression Eq(u0, 1)", where="the edited file, line 91: if x.norm() > 1:")]
    said = DeployResult("rnn", {"loop": "python"}, "x", 8, branched).verdict()
    assert "decides on a tensor's value at the edited file, line 91: if x.norm() > 1:" in said
    assert "torch.cond" in said and "loop=scan" not in said
    looped = [RouteResult("export", error="UserError: Constraints violated (seq)!")]
    assert "Set loop=scan" in DeployResult("rnn", {"loop": "python"}, "x", 8, looped).verdict()


def test_a_users_line_in_the_edited_file_is_named_as_the_editor_numbers_it():
    from explorer.compile.observe import user_line
    from explorer.core.paths import EDITOR

    error = RuntimeError(f'from user code:\n   File "{EDITOR}", line 91, in forward\n    if x.norm() > 1:')
    assert user_line(error).startswith(" (at the edited file, line 91") and EDITOR not in user_line(error)


def test_its_endpoint_keeps_its_parameters_and_their_order():
    """The HTTP API as documented (docs/cli.md): the names and their order are a promise to callers."""
    from explorer.api import endpoint_parameters
    from explorer.labs.registry import LABS

    assert [p.name for p in endpoint_parameters(LABS["deploy"])] == [
        "model", "config_json", "text", "lengths", "routes"]
