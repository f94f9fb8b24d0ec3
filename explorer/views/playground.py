"""The Playground's eager view as plain data: what the UI shows for a run, with no UI library involved.

`app.py` wires these functions to components; tests call them directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from explorer.core.errors import InputError
from explorer.core.fmt import count, format_bytes
from explorer.core.limits import CACHED_RUNS
from explorer.core.paths import sanitize, sanitized
from explorer.core.progress import Progress
from explorer.draw.layout import modules
from explorer.draw.partial import partial_figure
from explorer.draw.style import Unchecked
from explorer.eager.costs import Costs
from explorer.eager.partial import ForwardRaised, PartialGraph
from explorer.eager.timing import Measurement
from explorer.runs import playground as runs
from explorer.runs.playground import Planned
from explorer.runs.session import Captured, RunResult, Session
from explorer.serving.shared import LRU
from explorer.serving.timings import Timer
from explorer.sources.registry import SOURCES, source
from explorer.views.costs import (
    CardTimes,
    costs_report,
    costs_summary,
    costs_text,
    line_rows,
    module_rows,
    top_rows,
)
from explorer.views.figures import drawn_node, graph_figure, history_figure
from explorer.views.lines import branch_rows, lines_rows, lines_summary, lit_nodes
from explorer.views.report import build_report, captured_report
from models import Knob, arch_label
from models.config import config_dict


def control_specs() -> list[tuple[str, Knob]]:
    """Every (model, knob) in a fixed order: the UI makes one control per entry."""
    return [(name, k) for name, e in SOURCES.items() for k in e.knobs()]


def values_for(model: str, flat: list[Any]) -> dict[str, Any]:
    """The config values of `model` out of the flat list of every control's value."""
    return {k.name: v for (m, k), v in zip(control_specs(), flat, strict=True) if m == model}


@dataclass
class View:
    graph: Unchecked
    groups: list[tuple[str, str]]  # (label, module): the modules a person can open in the drawn graph
    cards: list[tuple[str, str, str]]  # (label, value, detail)
    history: Unchecked
    diff: str
    report: dict[str, Any]
    status: str


def cards(r: RunResult | Captured, pending: str = "queued for timing…",
          memory_pending: str = "profiling…") -> list[tuple[str, str, str]]:
    """The Playground's cards: a captured run's counts at once, its timings (`pending` until then) and memory."""
    g, timed = r.capture.graph, isinstance(r, RunResult)
    params, p_bytes = (r.params, r.param_bytes) if timed else (r.fixed.params, r.fixed.param_bytes)
    mem = r.memory if timed else r.fixed.memory
    # what the run did, where the model says (the zoo's), counted from its module calls (the transformer's blocks are
    # the config's, early exit's the input's: the card does not claim which); else how many module calls it took
    decided = source(r.model).structure(r.capture.trace)
    (what, n), *rest = decided.items() or [("module calls", sum(r.capture.trace.values()))]

    def timing(label: str, m: Measurement | None, mode: str) -> tuple[str, str, str]:
        return (label, f"{m.median_ms:.3f} ms", f"{m.spread()}; {mode}") if m else (label, "…", pending)

    return [
        ("tokens", f"{r.tokens}", "UTF-8 bytes" + (" (truncated)" if r.input.truncated_from else "")),
        (what, f"{n}", ", ".join(f"{k}: {v}" for k, v in rest) or ("counted in this run's module calls" if decided else
                                                                     "modules called in one forward")),
        ("graph nodes", f"{len(g.nodes):,}", f"{len(g.edges):,} edges, {len(g.param_leaves)} param leaves; a train "
         "step's, in train mode"),
        ("parameters", f"{params:,}", format_bytes(p_bytes)),
        timing("forward", r.forward if timed else None, "eval mode, no grad"),
        timing("train step", r.train_step if timed else None, "train mode (dropout on, batch norm per batch)"),
        ("saved for backward", format_bytes(r.capture.saved_bytes), "activations, deduplicated"),
        ("peak memory", format_bytes(mem.train if mem else None),
         f"train step; forward {format_bytes(mem.forward)}" if mem else memory_pending),
    ]


def _view(session: Session, r: RunResult, status: str, first: GraphFirst) -> View:
    return View(
        graph=first.graph,  # drawn once, from the same capture
        groups=first.groups,
        cards=cards(r, memory_pending="not profiled"),
        history=history_figure(session.history),
        diff=first.diff,
        report=build_report(r, session.compile_track),
        status=status,
    )


def openable(r: RunResult | Captured) -> list[tuple[str, str]]:
    """The modules of a run's graph a person can open (most nodes first), for a graph drawn collapsed."""
    return [("none: every module grouped", "")] + [(f"{m} ({count(n, 'node')})", m)
                                                    for m, n in modules(r.capture.graph)]


def opened_graph(session: Session, module: str) -> Unchecked | None:
    """The latest run's graph with `module` drawn node by node (the rest grouped as before); None before a run."""
    return None if session.last is None else graph_figure(session.last, expand=module)


def lines_view(session: Session) -> tuple[str, list[list[Any]], list[list[Any]]]:
    """The lines of the model's Python that ran for the input on screen: a summary, the lines' rows, and the
    branches' rows (this input and the session's earlier ones on this architecture)."""
    lines = session.lines()
    return lines_summary(lines, session.shown.fixed.capture.graph), lines_rows(lines), branch_rows(session.branches())


def lit_graph(session: Session, row: int | None, module: str) -> Unchecked:
    """The graph on screen with each node's line in its hover, and the nodes of the table's line `row` ringed."""
    lines = session.lines()
    if row is not None and not 0 <= row < len(lines.lines):
        raise InputError(f"no line {row} in the table of {len(lines.lines)}")
    line_of = {n: f"{f}:{line}" for n, (f, line) in lines.node_line.items()}
    return graph_figure(session.shown, expand=module, lit=("", frozenset()) if row is None else lit_nodes(lines, row),
                        line_of=line_of)


@dataclass(frozen=True)
class PickedNode:
    """A node clicked in the graph, traced back to the line of the model's Python that made it."""

    said: str
    row: int | None  # the lines table's row of that line; None: no line made it (a parameter, the loss)
    graph: Unchecked | None  # the graph with that line's nodes ringed; None: as it is


def node_picked(session: Session, node: int, module: str) -> PickedNode:
    """The line that made graph node `node` of the graph on screen (drawn with `module` open): for a drawn group,
    the line that made most of its nodes, the others named. Kept as the session's pick (`Session.picked_shown`)."""
    shown = session.shown
    drawn = None if shown is None else drawn_node(shown, node, module)
    if drawn is None:
        raise InputError(f"no node {node} in the graph on screen")
    lines = session.lines()
    session.picked = (shown.key, node)
    first = drawn.members[0]
    what = (f"**{first.param or first.op}** (module `{first.module}`, call {first.call})" if len(drawn.members) == 1
            else f"the group **{drawn.label}** ({count(len(drawn.members), 'node')})")
    made = Counter(lines.line_of(m.id) for m in drawn.members if not m.is_param)
    made.pop("", None)
    if not made:
        why = ("a parameter: no line of the forward makes it, the model holds it" if drawn.is_param else
               "no line of the model's files made it (torch's own code, outside them)")
        return PickedNode(sanitize(f"You picked {what}: {why}."), None, None)
    where, n = made.most_common(1)[0]
    if where == "the loss":
        return PickedNode(sanitize(f"You picked {what}: made by the loss, after the model returned."), None, None)
    row = next(i for i, s in enumerate(lines.lines) if f"{s.file}:{s.line}" == where)
    line = lines.lines[row]
    said = (f"You picked {what}: made at **{where}** (`{line.code}`), a line that ran "
            f"{count(line.hits, 'time')} for this input and made {count(len(line.nodes), 'node')}, ringed in the "
            "graph; its row is marked in the table.")
    if len(made) > 1:
        said += " The group's nodes were made at " + ", ".join(f"{w} ({c})" for w, c in made.most_common(4)) + (
            f" and {len(made) - 4} more lines" if len(made) > 4 else "") + f"; {where} made the most ({n})."
    return PickedNode(sanitize(said), row, lit_graph(session, row, module))


@dataclass(frozen=True)
class CostsView:
    said: str
    graph: Unchecked  # the graph coloured by each node's time
    top: list[list[Any]]
    modules: list[list[Any]]
    lines: list[list[Any]]
    report: dict[str, Any]
    text: str  # all of it as the CLI and a notebook print it


def costs_view(session: Session, costs: Costs | None = None) -> CostsView:
    """Where the train step of the input on screen spent its time, node by node: `costs`, or profiled now."""
    costs = costs or session.costs()
    lines = session.lines()
    shown = session.shown
    graph = shown.fixed.capture.graph
    last = session.last
    card = (CardTimes(last.forward.median_ms, last.train_step.median_ms)
            if last is not None and last.input.text == shown.input.text else None)
    line_of = {n: f"{f}:{line}" for n, (f, line) in lines.node_line.items()}
    figure = graph_figure(shown, line_of=line_of, heat={n: c.total_us for n, c in costs.nodes.items()})
    return CostsView(costs_summary(costs, card), figure, top_rows(costs, graph, lines), module_rows(costs, graph),
                     line_rows(costs, lines), costs_report(costs, graph, lines), costs_text(costs, graph, lines, card))


@dataclass
class GraphFirst:
    """The new graph and the cards of its counts, drawn as soon as it is captured, before the timings."""

    graph: Unchecked
    groups: list[tuple[str, str]]
    cards: list[tuple[str, str, str]]
    status: str
    report: dict[str, Any]  # the raw numbers so far: this capture's, not the previous run's
    diff: str  # against the previous run, known once captured: an untimed run shows it too


FIRST_RUN = "First run of this session: change the input or the architecture to diff."
DRAWN: LRU[Unchecked] = LRU(CACHED_RUNS)  # graph figures of runs without a diff: thirty students opening one link
# are shown one figure, drawn once (the figure is never changed once built)


def drawn_graph(captured: Captured) -> Unchecked:
    """The run's graph figure; built once per (model, config, text) when it has no diff to mark."""
    if captured.diff is not None:
        return graph_figure(captured)
    figure = DRAWN.get(captured.key)
    if figure is None:
        figure = graph_figure(captured)
        DRAWN.put(captured.key, figure)
    return figure


def first_view(planned: Planned) -> GraphFirst:
    """The new graph and the cards of its counts, drawn before the timings."""
    captured, p = planned.captured, planned.plan
    said = f"Graph of {count(captured.tokens, 'token')} drawn"
    status = (f"{said}; timing forward and train step next (about {p.estimate_s:.1f} s once its turn comes)…"
              if p.timed else f"{said}. {p.note}")
    return GraphFirst(drawn_graph(captured), openable(captured),
                      cards(captured) if p.timed else cards(captured, "not timed", "not profiled"), status,
                      captured_report(captured, "timing next" if p.timed else p.note),
                      captured.diff.text() if captured.diff else FIRST_RUN)


def measured_on(r: RunResult) -> str:
    m = r.forward
    where = f"{r.node} (cpu, core {', '.join(map(str, m.cores))})" if m.cores else "cpu"
    said = f"Measured on {where}, {m.threads} thread(s), torch.utils.benchmark ({m.runs} runs); memory "
    return said + ("from torch.profiler." if r.memory is not None else "not profiled (see above).")


def shown(session: Session, items: Iterator[Progress | Planned | RunResult]) -> Iterator[Progress | GraphFirst | View]:
    """A Playground run as the UI shows it: its progress, the graph first, then the whole view with the timings."""
    first = None
    try:
        for item in items:
            if isinstance(item, Planned):
                first = first_view(item)
                yield first
            elif isinstance(item, RunResult):
                assert first is not None
                notes = " ".join([*item.notices, *filter(None, [item.timing_note])])
                yield _view(session, item, f"{notes} {measured_on(item)}".strip(), first)
            else:
                yield item
    except ForwardRaised as e:  # shown, not refused: the graph up to the failure is what a person debugs from
        yield raised_view(session, e.partial)


def raised_view(session: Session, partial: PartialGraph) -> GraphFirst:
    """A forward that raised: where, and the graph it built up to there; nothing timed, the history unchanged."""
    arch = arch_label(session.model_name, session.config)
    tokens, graph = partial.tokens, partial.graph
    status = (f"**{sanitize(partial.said())}** The graph below is what it built up to there "
              f"({count(len([n for n in graph.nodes if not n.is_param]), 'operation node')}; the last one made "
              "before the failure is ringed). Nothing was timed; the history keeps the runs that worked.")
    report = sanitized({"model": session.model_name, "config": config_dict(session.config), "arch": arch,
                        "tokens": tokens, "error": partial.error, "line": partial.line, "code": partial.code,
                        "graph": graph.summary(), "eager": None})
    return GraphFirst(partial_figure(partial, arch, tokens), [], [("tokens", f"{tokens}", "UTF-8 bytes"),
                      ("graph nodes", f"{len(graph.nodes):,}", "up to the failure")], status, report, "")


def update(session: Session, model: str, text: str, compare: str, values: dict[str, Any],
           timer: Timer | None = None, fresh: bool = False,
           keyed: bool = False) -> Iterator[Progress | GraphFirst | View]:
    """A Playground run (`explorer.runs.playground.run`) as the UI shows it: run and shown."""
    return shown(session, runs.run(session, model, text, compare, values, timer, fresh, keyed))
