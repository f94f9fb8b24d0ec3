"""Edited code in the confined code worker: an edit's graph, its failures in the editor's lines, and what a hostile
edit gets: a message within its limit, the worker replaced, the server's process untouched, nothing left behind."""

import os
import pwd
from pathlib import Path

import pytest

from explorer.code.debug import EDIT_MODES, debug_edit
from explorer.code.edits import CodeEdits, CodeOutcome
from explorer.code.job import CodeJob, CodeRun, CodeTimingJob
from explorer.code.shapes import shapes_edit
from explorer.compile.jobs import PlaygroundJob
from explorer.compile.options import CompileOptions
from explorer.core.errors import InputError
from explorer.core.inputs import tokenize
from explorer.runs.session import Session
from explorer.sources.edited import CodeError
from explorer.sources.registry import MODELS_ENV, SOURCES, add_model_file
from explorer.views.code import compiled_text
from explorer.views.export import html_report
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import WorkerFailure
from tests.helpers import ROOT, descendants

RNN = (ROOT / "models" / "rnn.py").read_text()
IDS = tuple(tokenize("The cat sat on the mat.").ids[0].tolist())
TIMEOUT_S = 2.5  # the infinite loops' limit (the app's is GE_CODE_TIMEOUT_S): each waits it out
HANG_S = 120  # the limit of every other edit: a hang detector, not a speed (on a loaded machine an edit of the RNN
# once took past 2.5 s)


@pytest.fixture(scope="module")
def worker():
    os.environ["GE_TEST_SECRET"] = "hunter2"  # a server's secret: its workers start with it
    service = WorkerProcess(timeout_s=HANG_S, name="code", confined=True)
    yield service
    service.stop()
    os.environ.pop("GE_TEST_SECRET")


@pytest.fixture(scope="module")
def roomy():
    """A code worker with time for a compile and the debugging lab, which knows the operator's own model file (it
    loads the files the server was given before its walls clear the environment)."""
    before, env = dict(SOURCES), os.environ.get(MODELS_ENV)
    tagger = add_model_file(str(ROOT / "examples" / "lstm_tagger.py"))
    service = WorkerProcess(timeout_s=120, name="code", confined=True)
    yield service, tagger
    service.stop()
    SOURCES.clear()
    SOURCES.update(before)
    os.environ.pop(MODELS_ENV) if env is None else os.environ.update({MODELS_ENV: env})


def _run(worker: WorkerProcess, source: str, model: str = "rnn") -> CodeRun | CodeError:
    *_, reply = worker.run(CodeJob(model, source, {}, IDS))
    return reply


def _line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_an_edit_is_built_with_the_originals_knobs_and_its_graph_follows_the_code(worker):
    original = _run(worker, RNN)
    assert isinstance(original, CodeRun) and original.forward is None  # the graph first, timed next
    *_, timed = worker.run(CodeTimingJob(RNN, IDS))
    assert timed.runs >= 3 and timed.median_ms > 0
    *_, gone = worker.run(CodeTimingJob(RNN + "\n", IDS))
    assert gone is None  # not the model the worker holds: nothing timed
    # the same cell applied twice per step: every step's part of the graph doubles
    edited = RNN.replace("new = cell(x, state)", "new = cell(x, cell(x, state))")
    assert edited != RNN
    twice = _run(worker, edited)
    assert isinstance(twice, CodeRun)
    assert len(twice.fixed.capture.graph.nodes) > len(original.fixed.capture.graph.nodes)
    assert twice.fixed.params == original.fixed.params  # the same knobs and seed: the same weights
    # the lines that ran, read in the worker: the edited step once per token, making twice the original's nodes
    steps = [next(x for x in r.lines.lines if x.file == "<editor>" and x.code.startswith("new = cell(x"))
             for r in (original, twice)]
    assert [x.hits for x in steps] == [len(IDS)] * 2 and len(steps[1].nodes) == 2 * len(steps[0].nodes) > 0
    loop = next(a for a in twice.branches if a.fork.code == "for t, x in enumerate(xs):")
    assert loop.fork.file == "<editor>" and loop.now.body == len(IDS)


def test_a_broken_edit_is_said_at_its_line_in_the_editors_terms(worker):
    syntax = _run(worker, RNN.replace("def forward(self", "def forward((self", 1))
    assert isinstance(syntax, CodeError) and syntax.kind == "syntax"
    assert syntax.line == _line_of(RNN, "def forward(self") and syntax.column
    raising = RNN.replace("new = cell(x, state)", "new = cell(x, state[:, :3])")
    raised = _run(worker, raising)
    assert isinstance(raised, CodeError) and raised.kind == "raised"
    assert raised.line == _line_of(raising, "state[:, :3]") and raised.folded > 0  # torch's frames folded
    assert "forward" in {f.function for f in raised.frames} and "line" in raised.text()
    gone = _run(worker, RNN.replace("class UnrolledRNN(", "class Renamed("))
    assert isinstance(gone, CodeError) and "UnrolledRNN" in gone.message
    returns = _run(worker, RNN.replace("        return self.head(torch.cat(finals, dim=-1))\n\n\ndef _reverse",
                                       "        return None\n\n\ndef _reverse"))
    assert isinstance(returns, CodeError) and returns.kind == "output" and "NoneType" in returns.message


BOMBS = {  # what a visitor's edit might do at import or in forward: what stops it
    "an infinite loop at import": ("\nwhile True:\n    pass\n", "timed out"),
    "an infinite loop in forward": (None, "timed out"),
    "a memory bomb": ("\nimport torch\nkept = []\nwhile True:\n    kept.append(torch.empty(2**28))  # 1 GiB a turn\n",
                      "can't allocate memory"),
    "os._exit(1)": ("\nimport os\nos._exit(1)\n", "exit code 1"),
    "a segfault": ("\nimport ctypes\nctypes.string_at(0)\n", "SIGSEGV"),
    "a fork bomb": ("\nimport os\nwhile True:\n    os.fork()\n", "Operation not permitted"),
    "a subprocess": ("\nimport subprocess\nsubprocess.run(['sleep', '60'])\n", "Operation not permitted"),
    "a thread": ("\nimport threading\nt = threading.Thread(target=print)\nt.start()\nt.join()\n"
                 "raise RuntimeError('threads start')\n", "threads start"),
    "reading the server's environment": ("\nimport os\ntry:\n    seen = open('/proc/self/environ', 'rb').read()\n"
                                         "except PermissionError:\n    seen = b''\nraise RuntimeError('secret "
                                         "visible: ' + str(b'hunter2' in seen or 'hunter2' in str(os.environ)))\n",
                                         "secret visible: False"),
}


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_hostile_edit_gets_a_message_within_its_limit_and_leaves_nothing(worker, bomb):
    tail, said = BOMBS[bomb]
    source = RNN + tail if tail else RNN.replace("        x = self.embed(ids)\n",
                                                 "        x = self.embed(ids)\n        while True:\n            pass\n")
    worker.timeout_s = TIMEOUT_S if said == "timed out" else HANG_S
    try:
        reply = _run(worker, source)
        message = reply.text() if isinstance(reply, CodeError) else "ran"
    except WorkerFailure as e:
        message = str(e)
    finally:
        worker.timeout_s = HANG_S
    assert said in message, message
    assert isinstance(_run(worker, RNN), CodeRun)  # the next edit runs, in a worker replaced where it had to be
    assert descendants(worker.pid) == set()  # nothing the bomb started is left
    if os.geteuid() == 0:  # the worker runs as nobody: no process of nobody's but it (an orphan would be one)
        assert _processes_of(pwd.getpwnam("nobody").pw_uid) <= {worker.pid}


def _processes_of(uid: int) -> set[int]:
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:
            continue
        state = next(line for line in lines if line.startswith("State:")).split()[1]
        if int(next(line for line in lines if line.startswith("Uid:")).split()[1]) == uid and state != "Z":
            found.add(int(status.parent.name))
    return found


def test_a_sessions_edits_diff_against_the_last_good_code_and_undo_goes_back(worker):
    edits = CodeEdits.of("rnn")
    assert edits.original == RNN
    text = "The cat sat on the mat."

    def outcome(source: str) -> CodeOutcome:
        *_, o = edits.run(source, {}, text, worker)
        return o

    first = outcome(RNN)
    assert first.run is not None and first.diff is None  # nothing before it to diff against
    assert first.run.forward is not None  # the last outcome: with the forward's timing
    twice = RNN.replace("new = cell(x, state)", "new = cell(x, cell(x, state))")
    grown = outcome(twice)
    assert grown.diff is not None and grown.diff.nodes_added > 0 and grown.diff.nodes_removed == 0
    broken = outcome(twice.replace("def forward(self", "def forward((self", 1))
    assert broken.error is not None and broken.run is None and broken.good is grown.run  # the last good stays
    report = edits.report(grown)
    assert "+            new = cell(x, cell(x, state))" in report["edit"] and report["against_previous"]["nodes_added"]
    session = Session()
    session.labs["code"] = report
    page = html_report(session)  # the session's download carries the edit that ran
    assert "<h2>Code edit</h2>" in page and "new = cell(x, cell(x, state))" in page
    # the editor still holds the broken edit: undo goes back to the good edit that ran last, not past it
    assert edits.kept == [RNN, twice] and edits.undo(broken.source) == twice and edits.kept == [RNN, twice]
    assert edits.undo(twice) == RNN and edits.undo(RNN) == RNN  # then back to the original, and it stays


def test_an_edit_compiles_in_the_code_worker_and_dynamo_breaks_at_the_edited_line(roomy):
    branched = RNN.replace("        x = self.embed(ids)\n", "        x = self.embed(ids)\n        if x.norm() > 1:\n"
                           "            x = x * 2\n")
    job = PlaygroundJob("code tab", "rnn", {}, CompileOptions("aot_eager", "auto", False, False), [], [list(IDS)],
                        branched)
    *_, reply = roomy[0].run(job)
    said = compiled_text(reply)
    assert f"Data-dependent branching at the edited file, line {_line_of(branched, 'if x.norm()')}" in said
    figures, ex = reply.calls[-1].figures, reply.explanation
    assert figures is not None and figures.comparison.pairs >= 8  # the paired figures this edit's run measured
    assert f"timed in interleaved pairs: {figures.comparison.said()}." in said
    assert f"{ex.graph_count} graph" in said and f"{ex.graph_break_count} graph break" in said


def test_a_bug_injected_into_an_edit_runs_the_debugging_lab_in_the_code_worker(roomy):
    """An edit that checks its embeddings, with the NaN bug injected: every mode names the edited line."""
    checked = RNN.replace("        x = self.embed(ids)\n", "        x = self.embed(ids)\n        if not torch.isfinite("
                          "x).all():\n            raise ValueError('the embeddings are not finite')\n")
    *_, result = debug_edit(roomy[0], "rnn", {}, "nan_forward", "The cat sat on the mat.", checked)
    assert [m.mode for m in result.modes] == list(EDIT_MODES) and "compiled (inductor)" not in EDIT_MODES
    line = f"the edited file, line {_line_of(checked, 'raise ValueError')}"
    assert all(m.failed and m.failure.where == line for m in result.modes), [m.as_dict() for m in result.modes]
    assert result.verdict().startswith(f"NaN in forward: eager names {line}")
    with pytest.raises(AssertionError, match="confined"):  # never in an unconfined worker
        next(debug_edit(WorkerProcess(name="compile"), "rnn", {}, "shape", "x", checked))


def test_the_operators_own_file_is_edited_like_a_zoo_models(roomy):
    worker, tagger = roomy
    edits = CodeEdits.of(tagger)
    assert edits.original == (ROOT / "examples" / "lstm_tagger.py").read_text()
    shipped = _run(worker, edits.original, tagger)
    doubled = _run(worker, edits.original.replace("return self.tag(out)", "return self.tag(out + out)"), tagger)
    assert isinstance(shipped, CodeRun) and isinstance(doubled, CodeRun)
    assert len(doubled.fixed.capture.graph.nodes) == len(shipped.fixed.capture.graph.nodes) + 1
    gone = _run(worker, edits.original.replace("def build(", "def made("), tagger)
    assert isinstance(gone, CodeError) and gone.kind == "missing" and "function build" in gone.message
    indexed = edits.original.replace("return self.tag(out)", "return self.tag(out[5])")
    raised = _run(worker, indexed, tagger)
    assert isinstance(raised, CodeError) and raised.line == _line_of(indexed, "out[5]")
    assert "IndexError" in raised.text()
    with pytest.raises(InputError, match="no file of its own"):
        CodeEdits.of("gpt2")  # a library's architecture: nothing of the operator's to edit


def test_a_check_typed_into_an_edit_bounds_an_unbacked_length_where_its_assert_broke_the_graph(roomy):
    """Where code is allowed, a torch._check goes into the edit at any line: a refusal of long inputs breaks the
    graph at the edited line once the length is unbacked (dynamo cannot decide the `if` on a size with no value);
    the check of the same bound before it decides it, leaving one graph for every length, 1 included, each predicted
    before it ran."""
    transformer = (ROOT / "models" / "transformer.py").read_text()
    start = "        mask = padding_mask(ids, lengths)\n"
    bound = '        if ids.shape[1] > 512:\n            raise ValueError(f"{ids.shape[1]} tokens: at most 512")\n'
    asserted = transformer.replace(start, bound + start)
    checked = transformer.replace(start, "        torch._check(ids.shape[1] <= 512)\n" + bound + start)
    *_, broke = shapes_edit(roomy[0], "transformer", {"layers": 1}, asserted, "12 1 40", unbacked=True)
    assert [b.where for b in broke.breaks] == [f"<editor>:{_line_of(asserted, 'if ids.shape[1] > 512')}"]
    *_, held = shapes_edit(roomy[0], "transformer", {"layers": 1}, checked, "12 1 40", unbacked=True)
    assert held.breaks == () and len(held.graphs) == 1 and held.agreed == 3
    assert held.graphs[0].symbols.dimensions[1].became == "unbacked" and "checks" not in held.setting
    with pytest.raises(InputError, match="type the lengths"):
        next(shapes_edit(roomy[0], "transformer", {}, checked, " ", unbacked=False))
    with pytest.raises(AssertionError, match="confined"):  # never in an unconfined worker
        next(shapes_edit(WorkerProcess(name="compile"), "transformer", {}, checked, "3", unbacked=False))


def _returned(steps):
    """What a generator returns, its progress run through."""
    try:
        while True:
            next(steps)
    except StopIteration as stop:
        return stop.value


def test_an_edits_train_step_is_profiled_in_the_code_worker_each_node_charged_to_its_edited_line(roomy):
    from explorer.views.costs import line_rows

    edits = CodeEdits.of("rnn")
    with pytest.raises(InputError, match="Run an edit first"):
        _returned(edits.costs(roomy[0]))
    for _ in edits.run(RNN, {}, "The cat sat on the mat.", roomy[0]):
        pass
    costs = _returned(edits.costs(roomy[0]))
    assert costs.nodes and costs.matches_graph and costs.repeats >= 1
    rows = line_rows(costs, edits.good.lines)
    # the cell's line holds the most nodes (the rows go by time, which a busy spell of the machine can turn over)
    assert max(rows, key=lambda r: r[1])[0] == f"<editor>:{_line_of(RNN, 'new = cell(x, state)')}"
