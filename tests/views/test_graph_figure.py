"""The drawn graph says what it is: each colour's module with its count, the repeated module's steps on the axis,
shared parameters drawn once with their uses, each block's name on the figure (early exit's depth), and a
collapsed module that can be opened without changing the counts."""

import html
import json
from collections import Counter

import pytest

from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.draw.layout import SHARED_USES, layout_graph
from explorer.draw.tree_layout import tree_layout
from explorer.labs.deploy.checks import structure
from explorer.runs.session import Session
from explorer.views.figures import graph_figure
from explorer.views.playground import drawn_graph, openable, opened_graph
from models.tree import bracket


def _run(model: str, text: str):
    s = Session()
    s.configure(model)
    return s, s.run(text, budget_scale=0.05)


def _labels(fig) -> list[str]:
    return [t for trace in fig.data[1:] for t in (trace.texttemplate or []) if t]


def _trace(fig, name: str):
    return next(t for t in fig.data if t.name == name)


@pytest.mark.parametrize("tokens", [42, 300])
def test_an_unrolled_rnn_says_how_many_steps_ran_and_draws_its_weights_once(tokens):
    _, r = _run("rnn", text_of_length(DEFAULT_TEXT, tokens))
    graph = r.capture.graph
    fig = graph_figure(r)
    cell, nodes = graph.module_counts().most_common(1)[0]
    assert fig.layout.xaxis.title.text == f"forward →  ticks: {cell}, step (call) number"
    assert fig.layout.xaxis.ticktext[0] == "0" and int(fig.layout.xaxis.ticktext[-1]) >= tokens - tokens // 10 - 1
    first = fig.data[1].name  # the legend, most nodes first: the cell, with its steps and its share of the graph
    assert first.startswith(cell.split(".")[0]) and f"{tokens} steps" in first
    lay = layout_graph(graph)
    counted = "drawn groups" if lay.collapsed else "uses"  # collapsed, a weight feeds groups of calls, said so
    assert any("shared:" in t and counted in t for t in _labels(fig))
    placed = [(t, pos) for trace in fig.data[1:] if trace.texttemplate and not isinstance(trace.texttemplate, str)
              for t, pos in zip(trace.texttemplate, trace.textposition, strict=True) if t]
    steps = [pos for t, pos in placed if ", step" in t]
    # under the node (no module name on them), turned inwards at the figure's edges rather than cut
    assert not lay.collapsed or (steps and {pos.split()[0] for pos in steps} == {"bottom"})
    assert lay.shared and all(u >= SHARED_USES for u in lay.shared.values())
    assert all(a not in lay.shared for a, _ in lay.edges)  # no fan of edges from a shared weight
    assert f"{len(graph.nodes)} nodes, {len(graph.edges)} edges" in fig.layout.title.text  # counts: the whole graph
    assert nodes > 0


def test_early_exit_names_each_block_it_ran_and_no_other():
    model_text = "HelloHelloHelloHelloHelloHelloHelloHelloHe"
    s, r = _run("early_exit", model_text)
    ran = structure("early_exit", s.model, r.input.ids)["blocks run"]
    fig = graph_figure(r)
    labels = {t for trace in fig.data[1:] if trace.name not in (DECIDED, SKIPPED) for t in trace.texttemplate or []}
    assert {f"blocks.{i}" for i in range(ran)} <= labels
    assert f"blocks.{ran}" not in labels and f"exits.{ran - 1}" in labels


DECIDED, SKIPPED = "decision taken from the data", "not run (the exit skipped it)"


@pytest.mark.parametrize(("threshold", "blocks"), [(0.6, 6), (0.0, 6), (0.0, 1), (1.0, 6)])
def test_early_exits_decisions_are_drawn_as_a_branch_with_their_numbers_and_the_path_not_taken(threshold, blocks):
    s = Session()
    s.configure("early_exit", {"threshold": threshold, "blocks": blocks})
    r = s.run("The cat sat on the mat.", budget_scale=0.05)
    ran = structure("early_exit", s.model, r.input.ids)["blocks run"]
    fig = graph_figure(r)
    names = {t.name for t in fig.data}
    if threshold == 1.0:  # never exits: no decision is taken from the data, none drawn
        assert ran == blocks and not names & {DECIDED, SKIPPED}
        return
    decided = _trace(fig, DECIDED)
    assert len(decided.x) == ran  # one diamond per exit head that ran
    fills = list(decided.marker.color)
    assert fills[-1] != "#fff" and all(c == "#fff" for c in fills[:-1])  # only the last one exited
    marks = [html.unescape(t) for t in decided.texttemplate]  # escaped for plotly, which draws "&lt;" as "<"
    assert "≥" in marks[-1] and "exit" in marks[-1] and all(" < " in t for t in marks[:-1])
    assert all(f"threshold {threshold:.2f}" in h for h in decided.text)
    if ran == blocks:
        assert SKIPPED not in names
    else:
        skipped = _trace(fig, SKIPPED)
        assert list(skipped.texttemplate) == [f"blocks.{i}" for i in range(ran, blocks)]
        assert min(skipped.x) > decided.x[-1]  # the path not taken leaves the exit


def _tree(text: str, bracketing: str = "text"):
    s = Session()
    s.configure("tree", {"bracketing": bracketing})
    r = s.capture(text)
    return r, graph_figure(r)


def _depth(tree) -> int:
    return 0 if isinstance(tree, int) else 1 + max(_depth(tree[0]), _depth(tree[1]))


@pytest.mark.parametrize("bracketing", ["text", "left", "right", "balanced"])
def test_the_tree_is_drawn_as_its_parse_tree_read_from_the_graph_with_the_words_under_its_leaves(bracketing):
    text = "The cat sat on the mat, and the dog ran."
    r, fig = _tree(text, bracketing)
    ids = r.input.ids[0].tolist()
    lay = tree_layout(r.capture.graph, "leaf", "compose", bytes(ids))
    assert lay is not None and lay.direction == "up"
    leaves = sorted((d for d in lay.nodes if d.module == "leaf" and not d.is_param), key=lambda d: d.x)
    composed = [d for d in lay.nodes if d.module == "compose" and not d.is_param]
    assert len(leaves) == len(ids) and len(composed) == len(ids) - 1
    assert [d.x for d in leaves] == list(range(len(ids))) and {d.y for d in leaves} == {0.0}  # in the text's order
    # The root stands as high as the model's own bracketing is deep: the drawing is the tree autograd recorded.
    assert max(d.y for d in composed) == _depth(bracket(ids, bracketing))
    assert [w for *_, w in lay.words] == text.split()
    assert fig.layout.xaxis.title.text.startswith("forward ↑")
    assert any(t.mode == "text" and list(t.text) == text.split() for t in fig.data)  # written on the figure
    hovers = [h for t in fig.data if t.name and t.name.startswith("compose") for h in t.text]
    assert any(repr(text) in h for h in hovers)  # the root says it composes the whole sentence


def test_opening_a_module_of_the_tree_draws_its_nodes_layered_instead():
    r, _ = _tree("The cat sat.")
    fig = graph_figure(r, expand="compose")
    assert fig.layout.xaxis.title.text.startswith("forward →") and "compose opened" in fig.layout.title.text


def test_a_collapsed_module_opens_node_by_node_and_the_counts_stay():
    s, r = _run("rnn", DEFAULT_TEXT)
    graph = r.capture.graph
    choices = openable(r)
    assert choices[0][1] == "" and choices[1][1] == graph.module_counts().most_common(1)[0][0]
    cell = choices[1][1]
    grouped = layout_graph(graph)
    opened = layout_graph(graph, expand=cell)
    assert grouped.collapsed and opened.expanded == cell
    per_node = Counter(d.module for d in opened.nodes if len(d.members) == 1 and d.module == cell)
    assert per_node[cell] == sum(n.module == cell for n in graph.nodes)  # each node of the opened module on its own
    fig = opened_graph(s, cell)
    assert f"{cell} opened" in fig.layout.title.text and f"{len(graph.nodes)} nodes" in fig.layout.title.text
    assert layout_graph(graph, expand="not.a.module").expanded == ""  # a module of an earlier graph: as usual


def test_the_trees_title_writes_its_bracketing():
    _, r = _run("tree", "The cat sat on the mat, and then it slept.")
    title = graph_figure(r).layout.title.text
    assert "tree leaves 42, compositions 41" in title and "((The (cat (sat" in title


def test_sessions_opening_one_input_are_shown_one_figure_drawn_once_and_a_diff_gets_its_own():
    text = "Thirty students open one link."
    first, second = Session(), Session()
    first.configure("rnn")
    second.configure("rnn")
    shown = drawn_graph(first.capture(text))
    assert drawn_graph(second.capture(text)) is shown
    second.run(text, budget_scale=0.05)
    marked = second.capture(text + " And type.")  # a diff against the session's previous run: marked in red
    assert marked.diff is not None and drawn_graph(marked) is not drawn_graph(marked)


def test_an_fx_graphs_legend_names_op_kinds_and_a_long_title_wraps_instead_of_being_cut():
    from explorer.compile.observe import FxNode
    from explorer.draw.graph import TITLE_CHARS, draw_graph, fx_graph

    nodes = (FxNode("x", "placeholder", "x", ()), FxNode("y", "call_function", "aten.relu", ("x",)),
             FxNode("out", "output", "output", ("y",)))
    title = "Graph 2 of the transformer, compiled with inductor (dynamic=None), recompiled for 43 tokens because " \
            "the length of the input changed, and its guards failed on the new shape: {drawn}"
    fig = draw_graph(fx_graph(nodes), title, colour_by="op kind")
    assert fig.layout.legend.title.text == "op kind (most nodes first)"
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 3 and all(len(line) <= TITLE_CHARS for line in lines) and lines[-1].endswith("3 drawn")


@pytest.mark.parametrize("model", ["rnn", "transformer", "early_exit", "tree", "decoder"])
def test_the_unchecked_figures_are_valid_plotly(model):
    """The graph and the history are built without plotly's validation (style.Unchecked): here they are validated,
    a diff's red outline, an opened module and an architecture change included. Validating raises on any property
    plotly does not know or any value it would refuse."""
    import plotly.graph_objects as go

    from explorer.views.figures import history_figure

    s, _ = _run(model, "a few words")
    s.run(DEFAULT_TEXT, budget_scale=0.05)  # diffed against the first
    first = next(n.module for n in s.last.capture.graph.nodes if n.module != "model")
    for figure in (graph_figure(s.last), opened_graph(s, first), history_figure(s.history)):
        sent = figure.to_json()  # what Gradio sends: the dicts as built (nothing else asked of the figure yet)
        assert figure._figure is None
        checked = go.Figure(figure.to_plotly_json())  # validates: raises ValueError on anything plotly would refuse
        assert json.loads(sent) == json.loads(checked.to_json())  # the same JSON as plotly's own
        assert figure._repr_mimebundle_.__self__ is figure.figure  # a notebook's display hook is plotly's own


def test_a_notebooks_run_gives_its_graph_as_a_plotly_figure():
    """`explore(...).figure` is plotly's Figure (a notebook draws it, `.write_html` works): not the dicts the server
    sends."""
    import plotly.graph_objects as go

    from explorer.notebook import explore

    run = explore("rnn", "Hi there.", hidden=8, embed=8)
    assert isinstance(run.figure, go.Figure) and "9 tokens" in run.figure.layout.title.text.replace("<br>", " ")
