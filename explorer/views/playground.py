"""The Playground's eager view as plain data: what the UI shows for a run, with no UI library involved.

`app.py` wires these functions to components; tests call them directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.core.fmt import count, format_bytes
from explorer.core.inputs import empty_message
from explorer.core.limits import CACHED_RUNS
from explorer.eager.timing import Measurement
from explorer.serving.plan import plan
from explorer.serving.shared import LRU
from explorer.serving.timings import InProcess, Timer, timings
from explorer.session import Captured, RunResult, Session
from explorer.views.figures import graph_figure, history_figure
from explorer.views.layout import modules
from explorer.views.report import build_report
from models import ZOO, Knob, entry


def control_specs() -> list[tuple[str, Knob]]:
    """Every (model, knob) in a fixed order: the UI makes one control per entry."""
    return [(name, k) for name, e in ZOO.items() for k in e.knobs()]


def values_for(model: str, flat: list[Any]) -> dict[str, Any]:
    """The config values of `model` out of the flat list of every control's value."""
    return {k.name: v for (m, k), v in zip(control_specs(), flat, strict=True) if m == model}


@dataclass
class View:
    graph: go.Figure
    groups: list[tuple[str, str]]  # (label, module): the modules a person can open in the drawn graph
    cards: list[tuple[str, str, str]]  # (label, value, detail)
    history: go.Figure
    diff: str
    report: dict[str, Any]
    status: str


def cards(r: RunResult | Captured, pending: str = "queued for timing…",
          memory_pending: str = "profiling…") -> list[tuple[str, str, str]]:
    """The Playground's cards: a captured run's counts at once, its timings (`pending` until then) and memory."""
    g, timed = r.capture.graph, isinstance(r, RunResult)
    params, p_bytes = (r.params, r.param_bytes) if timed else (r.fixed.params, r.fixed.param_bytes)
    mem = r.memory if timed else r.fixed.memory
    (what, n), *rest = entry(r.model).structure(r.capture.trace).items()

    def timing(label: str, m: Measurement | None) -> tuple[str, str, str]:
        return (label, f"{m.median_ms:.3f} ms", m.spread()) if m else (label, "…", pending)

    return [
        ("tokens", f"{r.tokens}", "UTF-8 bytes" + (" (truncated)" if r.input.truncated_from else "")),
        (what, f"{n}", ", ".join(f"{k}: {v}" for k, v in rest) or "decided by this input"),
        ("graph nodes", f"{len(g.nodes):,}", f"{len(g.edges):,} edges, {len(g.param_leaves)} param leaves"),
        ("parameters", f"{params:,}", format_bytes(p_bytes)),
        timing("forward", r.forward if timed else None),
        timing("train step", r.train_step if timed else None),
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
        diff=r.diff.text() if r.diff else "First run of this session: change the input or the architecture to diff.",
        report=build_report(r, session.compile_track),
        status=status,
    )


def openable(r: RunResult | Captured) -> list[tuple[str, str]]:
    """The modules of a run's graph a person can open (most nodes first), for a graph drawn collapsed."""
    return [("none: every module grouped", "")] + [(f"{m} ({count(n, 'node')})", m)
                                                    for m, n in modules(r.capture.graph)]


def opened_graph(session: Session, module: str) -> go.Figure | None:
    """The latest run's graph with `module` drawn node by node (the rest grouped as before); None before a run."""
    return None if session.last is None else graph_figure(session.last, expand=module)


def update(session: Session, model: str, text: str, compare: str, values: dict[str, Any],
           timer: Timer | None = None, fresh: bool = False) -> Iterator[str | View | GraphFirst]:
    """Reconfigure if needed, capture and yield the new graph at once (it does not wait in the measurement queue),
    wait for the queue (yielding messages), time, and yield the view twice: with the timings, then with the
    profiler's memory. One run at a time per session; an input identical to the
    latest run's (a blur, a release, a link and the edit it causes) yields a message instead of a new run, unless
    `fresh` (then its timings are measured again, never reused), and so does an empty box: a pause while a person
    retypes, not an error (no error toast, no red badges over the previous run's figures). Timings run on
    `timer` (the server's measurement pool; default: in this thread)."""
    if text == "":
        still = f" The figures shown are still run {session.last.number}'s." if session.last else ""
        yield f"**Not run**: {empty_message()}{still}"
        return
    with session.run_lock:
        session.configure(model, values)  # validation first: a bad config never waits in the queue
        if session.is_latest(text, compare) and not fresh:
            yield f"Nothing changed since run {session.last.number}: its figures are the ones shown."
            return
        yield from _measured_run(session, text, compare, timer or InProcess(), fresh)


@dataclass
class GraphFirst:
    """The new graph and the cards of its counts, drawn as soon as it is captured, before the timings."""

    graph: go.Figure
    groups: list[tuple[str, str]]
    cards: list[tuple[str, str, str]]
    status: str


DRAWN: LRU[go.Figure] = LRU(CACHED_RUNS)  # graph figures of runs without a diff: thirty students opening one link
# are shown one figure, drawn once (the figure is never changed once built)


def drawn_graph(captured: Captured) -> go.Figure:
    """The run's graph figure; built once per (model, config, text) when it has no diff to mark."""
    if captured.diff is not None:
        return graph_figure(captured)
    figure = DRAWN.get(captured.key)
    if figure is None:
        figure = graph_figure(captured)
        DRAWN.put(captured.key, figure)
    return figure


def _measured_run(session: Session, text: str, compare: str, timer: Timer,
                  fresh: bool) -> Iterator[str | View | GraphFirst]:
    # The graph does not wait in the measurement queue: capturing it takes milliseconds on the server's own core
    # (timings run in their own processes, on their own cores), and an input any session ran before is cached.
    captured = session.capture(text, compare)
    p = plan(captured.capture)
    said = f"Graph of {count(captured.tokens, 'token')} drawn"
    first = GraphFirst(drawn_graph(captured), openable(captured),
                       cards(captured) if p.timed else cards(captured, "not timed", "not profiled"),
                       f"{said}; timing forward and train step next (about {p.estimate_s:.1f} s once its turn "
                       "comes)…" if p.timed else f"{said}. {p.note}")
    yield first
    if not p.timed:
        return
    sourced = None
    for step in timings(captured.key, lambda turn: session.job(captured, p.scaled(turn.budget_scale)), timer, fresh,
                        estimate_s=p.estimate_s):
        if isinstance(step, str):
            yield step
        else:
            sourced = step
    assert sourced is not None
    r = session.time_run(captured, sourced, note=p.note)
    notes = " ".join([*r.notices, *filter(None, [r.timing_note])])
    m = r.forward
    where = f"{r.node} (cpu, core {', '.join(map(str, m.cores))})" if m.cores else "cpu"
    measured = (f"Measured on {where}, {m.threads} thread(s), torch.utils.benchmark ({m.runs} runs); memory "
                "from torch.profiler.")
    if r.memory is None:
        measured = measured.replace("; memory from torch.profiler.", "; memory not profiled (see above).")
    yield _view(session, r, f"{notes} {measured}".strip(), first)
