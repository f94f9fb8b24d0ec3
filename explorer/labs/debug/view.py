"""The debugging lab's view as plain data: the modes side by side, the tracebacks, the NaN methods, the
comparison, the recorded hidden-state norms eager vs compiled (the UI, the CLI and the API show it; tests call it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.core import machine
from explorer.core.fmt import count
from explorer.core.machine import Machine
from explorer.draw.partial import partial_figure
from explorer.draw.style import Unchecked
from explorer.labs.contract import Kind, Output
from explorer.labs.debug.lab import DebugResult
from explorer.labs.debug.modes import ModeOutcome
from models.bugs import BUGS

# what happened second: a wide table scrolls sideways, and it is the column people read first
MODE_COLUMNS = ("mode", "fails?", "exception: first line, or what ran", "seconds to the error",
                "your line it names last", "traceback frames", "traceback lines")
NAN_COLUMNS = ("method", "what it names", "your line", "ms (median)", "cost against a plain step")
OUTPUTS = (
    Output("verdict", Kind.MARKDOWN),
    Output("modes", Kind.TABLE, "per mode", MODE_COLUMNS, prose=(MODE_COLUMNS[2],)),
    Output("nan", Kind.TABLE, "where did the NaN come from (NaN bugs)", NAN_COLUMNS, prose=("what it names",)),
    Output("partial", Kind.PLOT, "the graph eager mode built before it raised"),
    Output("comparison", Kind.PLOT, "against the un-bugged model", row=1),
    Output("inspection", Kind.PLOT, "a recording hook, eager vs compiled", row=1),
    Output("tracebacks", Kind.MARKDOWN, "the tracebacks, as printed", folded=True),
)


@dataclass
class DebugView:
    status: str
    verdict: str
    modes: list[list[Any]]
    tracebacks: str  # markdown: each mode's traceback in a fenced block
    nan: list[list[Any]]
    partial: Unchecked | None  # None: eager mode raised nothing in the forward
    comparison: go.Figure
    inspection: go.Figure
    report: dict[str, Any]


def _mode_row(m: ModeOutcome) -> list[Any]:
    f = m.failure
    if f is None:
        return [m.mode, "no", f"nothing raised (loss {m.loss:.3g}, gradients "
                f"{'finite' if m.grad_finite else 'NOT finite'})" + (f"; {m.note}" if m.note else ""), "—", "—",
                "—", "—"]
    return [m.mode, "yes", f"{f.exception}: {f.message}", "not measured" if m.seconds is None else f"{m.seconds:.2f}",
            f"{f.where}: {f.source}" if f.where else "none", f.frames, f.lines]


def comparison_figure(result: DebugResult, height: int = 320) -> go.Figure:
    rows = result.comparisons
    labels = [count(c.tokens, "token") + (" (non-ASCII)" if not c.text.isascii() else "") for c in rows]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[c.max_abs_diff for c in rows], name="max |diff|",
                text=[f"{c.max_abs_diff:.3g}" if c.error == "" else "" for c in rows],
                hovertemplate="%{x}: max |diff| %{y:.3g}<extra></extra>")
    raised = [(x, c.error) for x, c in zip(labels, rows, strict=True) if c.error]
    if raised:
        fig.add_scatter(x=[x for x, _ in raised], y=[0] * len(raised), mode="markers+text", name="raised",
                        marker={"symbol": "x", "size": 12}, text=["raised"] * len(raised), textposition="top center",
                        hovertext=[e for _, e in raised], hovertemplate="%{x}: %{hovertext}<extra></extra>")
    fig.update_layout(title="Bugged vs un-bugged (same weights)", yaxis_title="max |diff| of the logits",
                      height=height, margin={"l": 60, "r": 20, "t": 50, "b": 40}, showlegend=False)
    return fig


def inspection_figure(result: DebugResult, height: int = 320) -> go.Figure:
    fig = go.Figure()
    for r in result.inspection:
        fig.add_scatter(y=r.norms, mode="lines+markers", name=r.said()[:120])
    name = result.inspection[0].module if result.inspection else ""
    fig.update_layout(title=f"A hook on {name}: each hidden state's norm", height=height,
                      xaxis_title="hidden state (token, for the RNN's cell)", yaxis_title="norm",
                      margin={"l": 60, "r": 20, "t": 60, "b": 40}, legend={"orientation": "h", "y": -0.25})
    return fig


def view_of(result: DebugResult) -> DebugView:
    report = result.as_dict() | {"machine": machine.describe()}
    blocks = [f"**{m.mode}** ({m.failure.lines} lines)\n```\n{m.failure.text}\n```" for m in result.modes
              if m.failure]
    nan = [[f.method, f.found, f.where or "—", f"{f.ms:.2f}" if f.ms is not None else "—", f.cost_said()]
           for f in result.findings]
    g = result.graph
    status = (f"{result.model}, {result.tokens} tokens, bug: {BUGS[result.bug].what}. Times to the error are one "
              "run each; the NaN methods' costs are paired against a plain step; on "
              f"{machine.this_machine().line()}."
              + (f" Graph diff against the un-bugged model: {g.label}" if g else ""))
    return DebugView(status, f"**Verdict**: {result.verdict()}", [_mode_row(m) for m in result.modes],
                     "\n\n".join(blocks) or "No mode raised.", nan,
                     partial_figure(result.partial, result.model, result.tokens) if result.partial else None,
                     comparison_figure(result), inspection_figure(result), report)


def format_debug(report: dict[str, Any]) -> str:
    """The debugging lab's report as text (`debug` without --json)."""
    m = report["machine"]
    lines = [f"{report['model']}, {report['tokens']} tokens, bug {report['bug']}: {report['bug_what']}; "
             f"{Machine.of(m).line()}"]
    for mode in report["modes"]:
        f = mode["failure"]
        if f is None:
            lines.append(f"{mode['mode']:<22} no error   loss {mode['loss']:.3g}, gradients "
                         f"{'finite' if mode['grad_finite'] else 'NOT finite'}")
            continue
        after = "(time not measured: the worker stopped)" if mode["seconds"] is None else \
            f"after {mode['seconds']:.2f} s"
        lines.append(f"{mode['mode']:<22} FAILS {after}: {f['exception']}: {f['message']}")
        lines.append(f"{'':<23}names {f['where'] or 'none of your lines'} {f['source']}; traceback "
                     f"{f['frames']} frames, {f['lines']} lines")
    for n in report["nan"]:
        ms = f"{n['ms']:.2f} ms, " if n["ms"] is not None else ""
        lines.append(f"NaN by {n['method']:<15} {n['found']} {n['where']}  ({ms}{n['cost_said']})")
    for c in report["comparison"]:
        lines.append(f"vs un-bugged, {c['tokens']:>4} tokens: " + (f"raised {c['error']}" if c["error"] else
                                                                  f"max |diff| {c['max_abs_diff']:.3g}"))
    if p := report.get("partial"):
        lines.append(f"eager's graph before it raised: {p['nodes']} nodes, raised at {p['line'] or 'no line of yours'}"
                     f" {p['code']}")
    for r in report["inspection"]:
        lines.append(f"hook on {r['module']}, {r['said']}")
    lines.append(f"verdict: {report['verdict']}")
    return "\n".join(lines)
