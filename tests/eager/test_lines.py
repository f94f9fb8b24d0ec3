"""The lines that ran: each line's count equals what Python's own `trace` module counts for the same forward, every
operation node of the graph on screen is placed at a line of the model's files (or the loss's), on the zoo, the
library's architectures, the shipped examples and a model this project did not write; a forward that raises keeps
what ran up to it and names its line."""

import os
import trace
from collections import Counter

import pytest
import torch

from explorer.core.errors import InputError
from explorer.core.fmt import count
from explorer.core.paths import sanitize
from explorer.eager.capture import LOSS_HOOK, TRAIN_SEED, train_loss, training
from explorer.eager.graph import AutogradGraph
from explorer.eager.lines import model_files, record_lines
from explorer.runs.session import Session
from explorer.sources.library import ARCHITECTURES
from explorer.sources.registry import add_model_file
from explorer.views.figures import drawn_node, graph_figure
from explorer.views.lines import format_lines, lines_summary, lit_nodes
from explorer.views.playground import lit_graph, node_picked
from tests.helpers import ROOT

TEXT = "Lines run, graphs grow: 42 tokens, a comma."
FILES = ("examples/lstm_tagger.py", "examples/image_cnn.py", "tests/outside/moe_top1.py")
SMALL = {"layers": 1, "width": 32}  # a library architecture, small: the lines are the same at any size


def _independent(model: torch.nn.Module, ids: torch.Tensor) -> dict[tuple[str, int], int]:
    """Python's `trace` module's line counts for the same train-step forward, in the model's files."""
    files = model_files(model)
    counter = trace.Trace(count=1, trace=0)
    with training(model, TRAIN_SEED):
        counter.runfunc(lambda: train_loss(model(ids), model))
    return {(os.path.realpath(f), n): c for (f, n), c in counter.results().counts.items()
            if os.path.realpath(f) in files}


@pytest.mark.parametrize("model", ["rnn", "transformer", "tree", "early_exit", *(a.name for a in ARCHITECTURES),
                                   *FILES])
def test_each_lines_count_equals_pythons_trace_and_every_node_has_its_line(model, menu_restored):
    name = add_model_file(str(ROOT / model)) if model in FILES else model
    session = Session()
    session.configure(name, SMALL if any(a.name == model for a in ARCHITECTURES) else {})
    captured = session.capture(TEXT)
    lines = session.lines()
    assert lines.matches_graph and not lines.error
    ours = {(os.path.realpath(s.file), s.line): s.hits for s in lines.lines if s.hits}
    assert ours == _independent(session.model, captured.input.ids) and ours
    ops = [n for n in captured.fixed.capture.graph.nodes if not n.is_param]
    unplaced = [n.op for n in ops if not lines.line_of(n.id)]
    assert unplaced == []
    assert {lines.line_of(n.id) for n in ops} - {"the loss"} <= {f"{s.file}:{s.line}" for s in lines.lines if s.nodes}
    # the loss, made after the model returned, is the loss's, not a line's (unless the file defines its own loss)
    assert lines.loss_nodes or hasattr(session.model, LOSS_HOOK)


def test_an_unrolled_loop_is_one_line_run_once_per_token_and_its_nodes_light_up_in_the_graph():
    session = Session()
    session.configure("rnn", {})
    captured = session.capture(TEXT)
    lines = session.lines()
    step = next(i for i, s in enumerate(lines.lines) if s.code == "new = cell(x, state)")
    loop = lines.lines[step - 1]
    assert loop.code.startswith("for t, x in enumerate(xs)") and loop.hits == captured.tokens + 1  # and once to leave
    name, nodes = lit_nodes(lines, step)
    assert lines.lines[step].hits == captured.tokens and len(nodes) % captured.tokens == 0 and nodes
    figure = lit_graph(session, step, "")
    ring = [t.name for t in figure.data if (t.name or "").startswith(name)]
    assert ring == [f"{name}: {len(nodes):,} nodes"]
    # and every drawn node's hover names the line that made it (a group's, its lines with their counts)
    hovers = [h for t in figure.data if t.mode == "markers+text" for h in t.text]
    assert any(f"{len(nodes) // captured.tokens} made at {name}" in h for h in hovers), hovers[:3]
    said = lines_summary(lines, captured.fixed.capture.graph)
    assert f"The most run: {loop.file}:{loop.line} ran {loop.hits} times" in said
    row = next(r for r in format_lines(lines).splitlines() if r.startswith(name))
    assert row.split()[1:3] == [str(captured.tokens), str(len(nodes))]


def test_a_forward_that_raises_keeps_the_lines_up_to_it_and_names_the_failing_line(tmp_path, menu_restored):
    path = tmp_path / "shy.py"
    path.write_text(
        "import torch\n"
        "from torch import nn\n\n\n"
        "class Shy(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(256, 8)\n\n"
        "    def forward(self, ids):\n"
        "        x = self.embed(ids).tanh()\n"
        "        if (ids == ord('!')).any():\n"
        "            raise ValueError('no shouting')\n"
        "        return x.mean(1)\n\n\n"
        "def build():\n"
        "    return Shy()\n")
    session = Session()
    session.configure(add_model_file(str(path)), {})
    lines = record_lines(session.model, torch.tensor([list(b"Hi!")]))
    assert lines.error == "ValueError: no shouting" and lines.error_line == (str(path), 13)
    assert [(s.line, s.hits) for s in lines.lines] == [(11, 1), (12, 1), (13, 1)]
    # said without the server's paths: a temporary file by its name
    said = lines_summary(lines, AutogradGraph([], [], 0))
    assert "The forward raised at <tmp>/shy.py:13: ValueError: no shouting" in said


def test_an_operators_file_records_its_lines_in_the_worker_that_captures_it(menu_restored):
    from explorer.workers.process import WorkerProcess

    worker = WorkerProcess(name="capture")
    try:
        session = Session(isolate=lambda _: worker)
        session.configure(add_model_file(str(ROOT / "tests/outside/moe_top1.py")), {})
        captured = session.capture(TEXT)
        lines = session.lines()
        assert not session.holds_model  # built, captured and traced in the worker only
        routed = next(s for s in lines.lines if s.code == "picked = (choice == e).nonzero().squeeze(-1)")
        assert lines.matches_graph and routed.hits == 4  # once per expert
        ops = [n for n in captured.fixed.capture.graph.nodes if not n.is_param]
        assert all(lines.line_of(n.id) for n in ops)
    finally:
        worker.stop()


@pytest.mark.parametrize("model", ["rnn", "tree", "gpt2", "tests/outside/moe_top1.py"])
def test_a_node_clicked_in_the_graph_names_the_line_that_made_it_and_rings_that_lines_nodes(model, menu_restored):
    name = add_model_file(str(ROOT / model)) if model.endswith(".py") else model
    session = Session()
    session.configure(name, SMALL if model == "gpt2" else {})
    captured = session.capture(TEXT)
    lines = session.lines()
    figure = graph_figure(captured)
    clickable = [(t.customdata, t.text) for t in figure.data if t.customdata is not None]
    assert clickable, "no node of the figure answers a click"
    rows = 0
    for ids, hovers in clickable:
        for node, hover in zip(ids, hovers, strict=True):
            picked = node_picked(session, int(node), "")
            drawn = drawn_node(captured, int(node))
            first = drawn.members[0]  # the click names the node the hover describes
            assert hover.startswith(f"<b>{first.param or first.op if len(drawn.members) == 1 else drawn.label}</b>")
            made = Counter(lines.line_of(m.id) for m in drawn.members if not m.is_param) - Counter({"": 10**9})
            if picked.row is None:  # a parameter, or the loss's: no line of the model's files
                assert not made or set(made) == {"the loss"}, (picked.said, made)
                continue
            rows += 1
            line = lines.lines[picked.row]
            where = f"{line.file}:{line.line}"
            assert made.most_common(1)[0][1] == made[where] and f"made at **{sanitize(where)}**" in picked.said
            shown = sanitize(where)
            ring = [t.name for t in picked.graph.data if (t.name or "").startswith(shown)]
            assert ring == [f"{shown}: {count(len(line.nodes), 'node')}"]
    assert rows  # at least one drawn node came from a line
    # and once the lines are recorded, every operation's hover names its line before any line is picked
    hovers = [h for t in lit_graph(session, None, "").data if t.customdata is not None for h in t.text]
    assert sum("made at " in h for h in hovers) >= rows
    with pytest.raises(InputError, match="no node 999999"):
        node_picked(session, 999_999, "")
