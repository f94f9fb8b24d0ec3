"""The Code tab's view as plain data: where an edit broke or what it built, the graph (the last good one), its
change against the previous code's graph on the same input, and what torch.compile made of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explorer.code.edits import CodeOutcome
from explorer.code.job import CodeRun
from explorer.compile.jobs import PlaygroundReply
from explorer.core.fmt import count
from explorer.core.paths import EDITOR, in_editor
from explorer.draw.graph import draw_graph
from explorer.draw.style import Unchecked
from explorer.eager.costs import Costs
from explorer.views.lines import branch_rows, lines_rows


@dataclass(frozen=True)
class CodeView:
    status: str  # markdown: built or broken, in the editor's terms
    figure: Unchecked | None  # the last good code's graph
    cards: list[tuple[str, str, str]]
    diff: str  # per module, the nodes added and removed against the previous code's graph
    error_line: int | None = None  # the editor's line where the edit broke, marked in the editor
    lines: list[list[Any]] = field(default_factory=list)  # the last good code's lines that ran (views/lines.py)
    branches: list[list[Any]] = field(default_factory=list)  # and which way each of its branches went


def code_view(o: CodeOutcome, arch: str) -> CodeView:
    if o.error is not None:
        kept = " The graph below is the last code that ran." if o.good is not None else ""
        return CodeView(f"**{o.error.text()}**{kept}", _figure(o, arch) if o.good else None, _cards(o), "",
                        o.error.line, *_python(o))
    assert o.run is not None
    graph = o.run.fixed.capture.graph
    timed = f"forward {o.run.forward}" if o.run.forward else "timing its forward next"
    said = f"Built and ran in the code worker: {count(len(graph.nodes), 'node')}, {timed}."
    if o.diff is not None:
        said += f" Against the previous code: +{o.diff.nodes_added} / −{o.diff.nodes_removed} nodes."
    if o.run.lines is not None:
        ran = [x for x in o.run.lines.lines if x.hits and x.file == EDITOR]
        said += f" {count(len(ran), 'line')} of the edit ran (below, with the nodes each made)."
    return CodeView(said, _figure(o, arch), _cards(o), o.diff.text() if o.diff else "", None, *_python(o))


def _python(o: CodeOutcome) -> tuple[list[list[Any]], list[list[Any]]]:
    """The last good code's lines that ran and its branches, as the tables show them."""
    if o.good is None or o.good.lines is None:
        return [], []
    return lines_rows(o.good.lines), branch_rows(list(o.good.branches))


def _figure(o: CodeOutcome, arch: str) -> Unchecked:
    assert o.good is not None
    graph = o.good.fixed.capture.graph
    title = (f"Autograd graph of the edited code: {len(graph.nodes)} nodes, {len(graph.edges)} edges ({{drawn}}); "
             f"{arch}")
    added = o.diff.added_ids if o.diff and o.run is not None else frozenset()
    if added:
        title += f"<br><sup>red outline: +{o.diff.nodes_added} nodes vs {o.diff.label}</sup>"
    return draw_graph(graph, title, added, branches=o.good.fixed.capture.branches)


def heat_figure(run: CodeRun, costs: Costs, arch: str) -> Unchecked:
    """The edit's graph coloured and sized by each node's profiled time (forward + backward), as the Playground's
    costs view draws it, each node's line of the edit in its hover."""
    graph = run.fixed.capture.graph
    title = (f"Autograd graph of the edited code: {len(graph.nodes)} nodes, {len(graph.edges)} edges ({{drawn}}); "
             f"{arch}<br><sup>coloured and sized by each node's profiled time, forward + backward</sup>")
    line_of = {n: f"{f}:{line}" for n, (f, line) in run.lines.node_line.items()} if run.lines else None
    return draw_graph(graph, title, branches=run.fixed.capture.branches, line_of=line_of,
                      heat={n: c.total_us for n, c in costs.nodes.items()})


def _cards(o: CodeOutcome) -> list[tuple[str, str, str]]:
    if o.good is None:
        return []
    f, t = o.good.fixed, o.good.forward
    cards = [("graph nodes", f"{len(f.capture.graph.nodes):,}", f"{len(f.capture.graph.edges):,} edges"),
             ("parameters", f"{f.params:,}", "the original's knobs and seed"),
             ("forward", f"{t.median_ms:.3f} ms", t.spread()) if t else ("forward", "…", "timing next")]
    if o.diff is not None and o.run is not None:
        cards.append(("vs the previous code", f"+{o.diff.nodes_added} / −{o.diff.nodes_removed} nodes",
                      o.diff.label))
    return cards


def compiled_text(reply: PlaygroundReply) -> str:
    """The edit through torch.compile, in markdown: its graphs, where dynamo broke them (in the editor's lines), and
    eager against compiled."""
    ex = reply.explanation
    breaks = [f"- {b.reason} at {in_editor(b.where)}" + (f": `{b.code}`" if b.code else "")
              + (f" ({b.times} times)" if b.times > 1 else "") for b in ex.graph_breaks]
    made = ("no graph: dynamo gave up on the forward, which runs eagerly" if ex.skipped else
            f"{count(ex.graph_count, 'graph')}, {count(ex.graph_break_count, 'graph break')}")
    said = f"**Compiled (aot_eager) in the code worker**: {made}." + ("\n" + "\n".join(breaks) if breaks else "")
    call = reply.calls[-1]
    if call.error:
        return f"{said}\n\nThe compiled call failed: {call.error}"
    if call.figures is not None:
        c = call.figures.comparison
        said += f"\n\nEager against compiled on this input, timed in interleaved pairs: {c.said()}."
    return said
