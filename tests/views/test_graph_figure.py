"""The drawn graph says what it is: each colour's module with its count, the repeated module's steps on the axis,
shared parameters drawn once with their uses, each block's name on the figure (early exit's depth), and a
collapsed module that can be opened without changing the counts."""

from collections import Counter

import pytest

from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.deploy.checks import structure
from explorer.session import Session
from explorer.views.figures import graph_figure
from explorer.views.layout import SHARED_USES, layout_graph
from explorer.views.playground import openable, opened_graph


def _run(model: str, text: str):
    s = Session()
    s.configure(model)
    return s, s.run(text, budget_scale=0.05)


def _labels(fig) -> list[str]:
    return [t for trace in fig.data[1:] for t in (trace.texttemplate or []) if t]


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
    assert any("shared:" in t and "uses" in t for t in _labels(fig))
    lay = layout_graph(graph)
    assert lay.shared and all(u >= SHARED_USES for u in lay.shared.values())
    assert all(a not in lay.shared for a, _ in lay.edges)  # no fan of edges from a shared weight
    assert f"{len(graph.nodes)} nodes, {len(graph.edges)} edges" in fig.layout.title.text  # counts: the whole graph
    assert nodes > 0


def test_early_exit_names_each_block_it_ran_and_no_other():
    model_text = "HelloHelloHelloHelloHelloHelloHelloHelloHe"
    s, r = _run("early_exit", model_text)
    ran = structure("early_exit", s.model, r.input.ids)["blocks run"]
    labels = set(_labels(graph_figure(r)))
    assert {f"blocks.{i}" for i in range(ran)} <= labels
    assert f"blocks.{ran}" not in labels and f"exits.{ran - 1}" in labels


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
