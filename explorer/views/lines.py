"""The lines that ran, as the Playground, the CLI and the report show them: a table of the model's lines with how
often each ran and how many of the graph's nodes it made, a summary that a number behind it decides, the nodes
of one line to light up in the graph, and which way each branch went for this input and the session's others."""

from __future__ import annotations

from typing import Any

from explorer.core.fmt import count
from explorer.core.paths import sanitize
from explorer.eager.branches import Across
from explorer.eager.graph import AutogradGraph
from explorer.eager.lines import LinesRan
from explorer.views.tables import format_rows

LINES_COLUMNS = ["line", "ran", "nodes", "code"]
BRANCH_COLUMNS = ["line", "branch", "this input", "this session's inputs on this architecture"]


def lines_rows(lines: LinesRan) -> list[list[Any]]:
    return [[sanitize(f"{s.file}:{s.line}"), s.hits, len(s.nodes), s.code] for s in lines.lines]


def lit_nodes(lines: LinesRan, row: int) -> tuple[str, frozenset[int]]:
    """The line of the table's `row` and the nodes it made."""
    s = lines.lines[row]
    return sanitize(f"{s.file}:{s.line}"), frozenset(s.nodes)


def lines_summary(lines: LinesRan, graph: AutogradGraph) -> str:
    ops = [n for n in graph.nodes if not n.is_param]
    placed = sum(1 for n in ops if n.id in lines.node_line)
    ran = [s for s in lines.lines if s.hits]
    said = [f"**{count(len(ran), 'line')}** of {', '.join(lines.files)} ran for this input; "
            f"{placed} of {count(len(ops), 'operation node')} were made at one of them"
            + (f", {len(lines.loss_nodes)} by the loss after the model returned" if lines.loss_nodes else "") + "."]
    if busiest := max(ran, key=lambda s: (s.hits, len(s.nodes)), default=None):
        said.append(f"The most run: {busiest.file}:{busiest.line} ran {count(busiest.hits, 'time')} and made "
                    f"{count(len(busiest.nodes), 'node')} (`{busiest.code}`).")
    most = max(lines.lines, key=lambda s: len(s.nodes), default=None)
    if most is not None and most is not busiest and most.nodes:
        said.append(f"The most nodes: {most.file}:{most.line}, {count(len(most.nodes), 'node')} from "
                    f"{count(most.hits, 'run')} (`{most.code}`).")
    if not lines.matches_graph:
        said.append("This pass drew a different graph from the one shown (the model draws differently each run): "
                    "the nodes per line are this pass's, not the figure's.")
    if lines.error:
        where = f" at {lines.error_line[0]}:{lines.error_line[1]}" if lines.error_line else ""
        said.append(f"The forward raised{where}: {lines.error}")
    said.append("Recorded in a pass of its own (a line tracer and autograd's anomaly mode), never timed. Pick a "
                "line in the table to light up its nodes in the graph.")
    return sanitize(" ".join(said))  # a file of the operator's: no path of the server


def lines_report(lines: LinesRan) -> dict[str, Any]:
    """The report's `lines` (JSON)."""
    return {"files": list(lines.files), "matches_graph": lines.matches_graph, "loss_nodes": len(lines.loss_nodes),
            "error": lines.error, "error_line": list(lines.error_line) if lines.error_line else None,
            "lines": [{"file": s.file, "line": s.line, "code": s.code, "ran": s.hits, "nodes": len(s.nodes)}
                      for s in lines.lines]}


def format_lines(lines: LinesRan) -> str:
    """The lines as the CLI prints them."""
    return format_rows(["line", "ran", "nodes", "code"],
                       [[f"{s.file}:{s.line}", s.hits, len(s.nodes), s.code] for s in lines.lines])


def branch_rows(forks: list[Across]) -> list[list[Any]]:
    return [[sanitize(f"{a.fork.file}:{a.fork.line}"), a.fork.code, a.now.said(a.fork.kind), sanitize(a.said())]
            for a in forks]


def branches_report(forks: list[Across]) -> list[dict[str, Any]]:
    """The report's `branches` (JSON)."""
    return [{"file": a.fork.file, "line": a.fork.line, "kind": a.fork.kind, "code": a.fork.code,
             "reached": a.now.reached, "body": a.now.body, "else": a.now.orelse, "by_data": a.by_data,
             "this_input": a.now.said(a.fork.kind), "taken_by": list(a.taken_by), "not_taken_by": list(a.not_taken_by)}
            for a in forks]


def format_branches(forks: list[Across]) -> str:
    """The branches as the CLI prints them."""
    return "\n".join(f"{a.fork.file}:{a.fork.line}  {a.fork.code}\n    this input: {a.now.said(a.fork.kind)}; "
                     f"{a.said()}" for a in forks)


def lines_text(lines: LinesRan, forks: list[Across], earlier: int) -> str:
    """The lines that ran and which way each branch went, as the CLI and a notebook print them; `earlier`: the
    session's inputs before this one that the branches count."""
    return (f"The lines that ran ({', '.join(lines.files)}), recorded in a pass of their own, never timed:\n"
            f"{format_lines(lines)}\n\n"
            + (f"Which way each branch went, for this input and the {earlier} before it:" if earlier else
               "Which way each branch went:") + f"\n{format_branches(forks)}")
