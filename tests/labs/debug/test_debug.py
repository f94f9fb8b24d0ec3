"""The debugging lab's mechanisms on the real models: each bug fails (or not) as documented in each mode, the
line named is the injected one (derived from models/bugs.py, not typed), the NaN methods name what they name on
this machine, the comparison catches the silent bugs, and the hook is measured under compile."""

import math
import sysconfig

import pytest

from explorer.core.errors import InputError
from explorer.core.paths import PROJECT, sanitize
from explorer.labs.debug.compare import compare, graph_change
from explorer.labs.debug.inspect import InspectJob, compared, record
from explorer.labs.debug.lab import DebugResult, run_debug
from explorer.labs.debug.modes import DebugJob, bugged, eager, traced
from explorer.labs.debug.nan import locate
from explorer.labs.debug.view import format_debug, view_of
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import WorkerContext
from models import make_config
from models.bugs import BUGS, SHAPE_BUG_TOKENS
from models.tokenizer import encode, to_ids
from tests.helpers import source_line

LONG = "The cat sat on the mat, and then it slept."  # 42 tokens: past the shape bug's threshold
SHORT = "Hi there."


def items_of(items):
    *_, last = items
    return last


def _bug_line(bug: str) -> str:
    return source_line("models/bugs.py", BUGS[bug].marker)


@pytest.mark.parametrize("model", ["rnn", "transformer", "early_exit", "tree"])
def test_the_shape_bug_fails_eagerly_on_long_inputs_only_naming_its_line(model):
    long = eager(model, {}, "shape", to_ids(LONG))
    assert long.failed and long.failure.exception == "RuntimeError" and "is invalid for input of size" in \
        long.failure.message
    assert long.failure.where == _bug_line("shape")
    assert "/work/" not in long.failure.text and "site-packages" not in long.failure.text  # no machine paths
    assert len(SHORT.encode()) <= SHAPE_BUG_TOKENS and not eager(model, {}, "shape", to_ids(SHORT)).failed


def test_compiled_the_same_bug_names_the_line_after_a_much_longer_traceback():
    first = eager("rnn", {}, "shape", to_ids(LONG)).failure
    compiled = DebugJob("rnn", {}, "shape", encode(LONG), "eager").run(WorkerContext(lambda _: None))
    assert compiled.failed and compiled.mode == "compiled (eager)"
    assert compiled.failure.exception == "TorchRuntimeError" and compiled.failure.where == first.where
    assert compiled.failure.lines > 3 * first.lines


def test_a_trace_reports_an_unrelated_cause_for_the_rnn():
    t = traced("rnn", {}, "shape", to_ids(LONG))
    assert t.failed and "Expected 8 elements in a list but found 42" in t.failure.message
    assert t.failure.where == ""  # none of the user's lines


def test_a_trace_that_raises_nothing_says_it_froze_the_length_check():
    t = traced("transformer", {}, "shape", to_ids(LONG))  # traced at 8 tokens: the bug's `if` was frozen False
    assert not t.failed and t.note.startswith("traced at 8 tokens: the trace froze")
    assert "TracerWarning at models/bugs.py:" in t.note


def test_a_verdict_without_eager_says_what_each_mode_did():
    t = traced("transformer", {}, "shape", to_ids(LONG))
    result = DebugResult("transformer", {}, "shape", LONG, 42, [t])
    assert result.verdict() == f"{BUGS['shape'].title}: traced raises nothing."  # was an empty sentence


def test_nan_bugs_raise_nothing_and_show_only_in_the_numbers():
    fwd = eager("rnn", {}, "nan_forward", to_ids(LONG))
    assert not fwd.failed and math.isnan(fwd.loss) and fwd.grad_finite is False
    bwd = eager("rnn", {}, "nan_backward", to_ids(LONG))
    assert not bwd.failed and math.isfinite(bwd.loss) and bwd.grad_finite is False


def test_the_nan_methods_name_what_they_name_here():
    fwd = {f.method: f for f in locate(bugged("rnn", {}, "nan_forward"), to_ids(LONG))}
    assert fwd["forward hooks"].found == "embed (call 1)"  # the first module with finite inputs, NaN output
    assert fwd["dispatch mode"].found == "aten.log.default"
    assert fwd["dispatch mode"].where.startswith(_bug_line("nan_forward"))  # the exact line: only this method
    assert not fwd["detect_anomaly"].where.startswith(_bug_line("nan_forward"))  # it names the loss's backward
    bwd = {f.method: f for f in locate(bugged("rnn", {}, "nan_backward"), to_ids(LONG))}
    assert bwd["detect_anomaly"].where.startswith(_bug_line("nan_backward"))  # in backward: anomaly mode's case
    assert bwd["forward hooks"].found.startswith("nothing")
    assert all(f.ms > 0 and f.cost.pairs >= 8 and f.cost.low <= f.cost.ratio <= f.cost.high
               for f in [*fwd.values(), *bwd.values()])


def test_the_comparison_catches_the_silent_bugs():
    silent = compare("transformer", {}, "silent", [LONG, "abc"])
    assert all(c.max_abs_diff > 1e-4 for c in silent)
    branch = compare("transformer", {}, "branch", [LONG, "naïve café"])
    assert branch[0].max_abs_diff == 0 and branch[1].max_abs_diff > 1e-4  # only the non-ASCII input goes wrong
    change = graph_change("transformer", {}, "silent", LONG)
    assert change.nodes_bugged > change.nodes_clean and change.added > 0  # the mask's ops are in the graph


def test_a_recording_hook_breaks_the_compiled_graph_and_still_sees_every_step():
    tokens = encode(LONG)
    eager_rec = record("rnn", {}, tokens)
    assert eager_rec.calls == len(tokens) and len(eager_rec.norms) == len(tokens)  # one per token
    rec = compared(eager_rec, InspectJob("rnn", {}, tokens, "eager").run(WorkerContext(lambda _: None)))
    assert rec.graph_breaks and any("tolist" in b for b in rec.graph_breaks)
    assert rec.max_abs_diff_vs_eager is not None and rec.max_abs_diff_vs_eager < 1e-5


@pytest.mark.slow
def test_the_lab_through_the_compile_worker(tmp_path):
    service = WorkerProcess(timeout_s=120)
    try:
        items = list(run_debug(service, "rnn", make_config("rnn"), "shape", LONG, ["eager", "compiled (eager)"]))
        nan = items_of(run_debug(service, "rnn", make_config("rnn"), "nan_forward", LONG, ["eager"]))
    finally:
        service.stop()
    result = items[-1]
    assert isinstance(result, DebugResult)
    eager_mode, compiled = result.modes
    assert eager_mode.failed and compiled.failed and compiled.failure.where == eager_mode.failure.where
    assert "eager names models/bugs.py" in result.verdict() and "names the same line" in result.verdict()
    # the graph eager mode built before it raised, the bug's line named, drawn with its last node ringed
    partial = result.partial
    assert partial is not None and partial.graph.nodes and partial.last >= 0
    # (the line of the model's own file that called the embedding whose hook raised, as the Playground names it)
    assert partial.line == source_line("models/rnn.py", "x = self.embed(ids)")
    assert "is invalid for input of size" in partial.error
    assert view_of(result).partial is not None and result.as_dict()["partial"]["nodes"] == len(partial.graph.nodes)
    assert "eager's graph before it raised" in format_debug(view_of(result).report)
    assert nan.partial is None and view_of(nan).partial is None  # a NaN raises nothing: no partial graph


def test_bad_choices_are_refused_before_any_work():
    service = WorkerProcess(timeout_s=30)
    with pytest.raises(InputError, match="unknown bug"):
        list(run_debug(service, "rnn", make_config("rnn"), "typo", LONG, ["eager"]))
    with pytest.raises(InputError, match="unknown mode"):
        list(run_debug(service, "rnn", make_config("rnn"), "shape", LONG, ["jit"]))
    assert service.pid is None


def test_no_path_of_this_machine_survives_in_a_traceback():
    stdlib = sysconfig.get_paths()["stdlib"]
    text = (f'File "{stdlib}/multiprocessing/connection.py", line 3\nFile "{PROJECT}.venv/lib/python3.11/'
            f'site-packages/torch/nn/modules/module.py", line 9\nFile "{PROJECT}models/bugs.py", line 19')
    assert sanitize(text) == ('File "<python>/multiprocessing/connection.py", line 3\nFile '
                              '"torch/nn/modules/module.py", line 9\nFile "models/bugs.py", line 19')
    # a venv inside the project, named relative to it (the lines that ran on a library model): the package's path
    assert sanitize("made at **.venv/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py:619**") == (
        "made at **transformers/models/gpt2/modeling_gpt2.py:619**")


def test_a_nan_locators_cost_is_said_only_by_its_whole_interval():
    from explorer.eager.compare import Comparison
    from explorer.labs.debug.nan import PLAIN, Finding

    def finding(method_ms: list[float], plain_ms: list[float]) -> str:
        return Finding("hooks", "x", "", Comparison.of("hooks", PLAIN, method_ms, plain_ms)).cost_said()

    plain = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.02]
    assert finding([3 * x for x in plain], plain).startswith("3.0x a plain step (95% interval")
    assert finding(list(reversed(plain)), plain).startswith("no cost resolved against a plain step")
    assert finding([0.5 * x for x in plain], plain).startswith("no cost: 0.50x a plain step, faster by its whole")


def test_the_debugging_lab_runs_on_a_scan_rnn_and_says_what_cannot_run_there():
    """loop=scan: a dispatch mode cannot trace the scan (its failure left dynamo's cache broken, and the graph
    diff after it raised inside the model); a hook inside the scan cannot be compiled. Each is said, the rest run."""
    from explorer.api import final, named_subject, run_lab
    from explorer.labs.contract import LabContext
    from explorer.labs.registry import LABS
    from explorer.workers.protocol import Here, Workers

    here = Here()
    view = final(run_lab(LABS["debug"], named_subject("rnn", {"loop": "scan"}, "The cat sat on the mat, and then."),
                         {"bug": "nan_forward", "modes": "eager"}, LabContext(Workers.on(here), lambda: "")))
    report = view.report
    assert report["graph_change"] is not None  # the graphs of the clean and the bugged model, diffed
    dispatch = next(n for n in report["nan"] if n["method"] == "dispatch mode")
    assert dispatch["found"].startswith("not run on this model") and dispatch["ms"] is None
    assert [n["ms"] is not None for n in report["nan"]] == [True, True, False]
    compiled = report["inspection"][1]
    assert compiled["error"].startswith("UncapturedHigherOrderOpError")
    assert "compiled (eager): failed: UncapturedHigherOrderOpError" in compiled["said"]


def test_its_endpoint_keeps_its_parameters_and_their_order():
    """The HTTP API as documented (docs/cli.md): the names and their order are a promise to callers."""
    from explorer.api import endpoint_parameters
    from explorer.labs.registry import LABS

    assert [p.name for p in endpoint_parameters(LABS["debug"])] == [
        "model", "config_json", "bug", "text", "modes"]
