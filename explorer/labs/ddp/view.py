"""The multi-process lab's view as plain data: a timeline per rank of every run (compute, communication,
waiting, stalls), how each rank ended, the measured costs and the verdict (the UI, the CLI and the API show it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.core import machine
from explorer.core.machine import Machine
from explorer.labs.contract import Kind, Output
from explorer.labs.ddp.registry import SCENARIOS
from explorer.labs.ddp.results import (
    ALLREDUCE,
    BACKWARD,
    COMPILE,
    FORWARD,
    KINDS,
    OPTIMIZER,
    STALLED,
    WAIT,
    Cost,
    DdpResult,
)

COST_COLUMNS = ("what", "median", "IQR", "samples", "note")
COLOURS = {FORWARD: "#4C78A8", BACKWARD: "#72B7B2", COMPILE: "#B279A2", WAIT: "#E45756", ALLREDUCE: "#F58518",
           OPTIMIZER: "#54A24B", STALLED: "#9D755D"}


OUTPUTS = (
    Output("verdict", Kind.MARKDOWN),
    Output("timeline", Kind.PLOT, "per rank: compute, communication, waiting"),
    Output("endings", Kind.MARKDOWN),
    Output("costs", Kind.TABLE, "measured costs", COST_COLUMNS, prose=("note",)),
)


@dataclass(frozen=True)
class DdpOutcome:
    """A scenario's result, and which model it ran on (the Playground's, or the scenario's own) and why."""

    result: DdpResult
    which: str


@dataclass
class DdpView:
    status: str
    verdict: str  # markdown
    endings: str  # markdown: per run, how each rank ended
    costs: list[list[Any]]  # rows of COST_COLUMNS
    timeline: go.Figure
    report: dict[str, Any]


def timeline_figure(result: DdpResult, height_per_row: int = 34) -> go.Figure:
    """Every run's ranks as rows, time from the run's first segment on x; a bar per segment coloured by kind; an
    x where a rank raised or died."""
    fig = go.Figure()
    rows: list[str] = []
    bars: dict[str, dict[str, list]] = {k: {"y": [], "base": [], "x": [], "text": []} for k in KINDS}
    ends: dict[str, list] = {"x": [], "y": [], "text": []}
    for i, run in enumerate(result.runs):
        starts = [s.start_s for r in run.ranks if r.report for s in r.report.segments]
        zero = min(starts, default=0.0)
        for r in run.ranks:
            row = f"run {i + 1} · rank {r.rank}"
            rows.append(row)
            if r.report is None:
                continue
            for s in r.report.segments:
                b = bars[s.kind]
                b["y"].append(row)
                b["base"].append((s.start_s - zero) * 1e3)
                b["x"].append(s.ms)
                b["text"].append(f"step {s.step}: {s.kind}, {s.ms:.1f} ms")
            if r.state != "finished":
                last = max((s.end_s for s in r.report.segments), default=zero)
                at = r.report.error_at_s if r.report.error_at_s is not None else last
                ends["x"].append((at - zero) * 1e3)
                ends["y"].append(row)
                ends["text"].append(r.report.error or r.state)
            values = r.report.values
            for key, error in values.items():  # a configuration that raised while the rank ran on to the next
                step = values.get(f"{key} step") if key.endswith(": error") and error else None
                if step is not None:
                    ends["x"].append((max((s.end_s for s in r.report.segments if s.step == step), default=zero)
                                      - zero) * 1e3)
                    ends["y"].append(row)
                    ends["text"].append(f"{key.removesuffix(': error')} raised: {error}")
            if r.rank == 0:  # where each configuration of the run begins, named
                for key, first in values.items():
                    starts_at = [s.start_s for s in r.report.segments if s.step == first]
                    if key.endswith(": first step") and starts_at:
                        fig.add_vline(x=(min(starts_at) - zero) * 1e3, line={"dash": "dot", "color": "#555"},
                                      annotation={"text": f"run {i + 1}: {key.removesuffix(': first step')}",
                                                  "textangle": -90, "font": {"size": 12}, "yanchor": "top"})
    for kind, b in bars.items():
        if b["x"]:
            fig.add_bar(y=b["y"], base=b["base"], x=b["x"], orientation="h", name=kind,
                        marker_color=COLOURS[kind], hovertext=b["text"], hovertemplate="%{hovertext}<extra></extra>")
    if ends["x"]:
        fig.add_scatter(x=ends["x"], y=ends["y"], mode="markers", name="raised / died", marker={"symbol": "x",
                        "size": 13, "color": "black"}, hovertext=ends["text"],
                        hovertemplate="%{hovertext}<extra></extra>")
    fig.update_layout(barmode="overlay", title=f"Per rank and run: what each process did ({result.scenario}, "
                      f"{result.world_size} processes)", xaxis_title="ms since the run's first step",
                      yaxis={"categoryorder": "array", "categoryarray": rows[::-1]},
                      # the legend at the side: below the plot it would cover the axis title of a two-row chart
                      height=max(300, 120 + height_per_row * len(rows)), margin={"l": 110, "r": 20, "t": 60, "b": 50})
    return fig


def _cost_row(c: Cost) -> list[Any]:
    spread = "—" if c.samples == 1 else f"{c.q1_ms:.1f}–{c.q3_ms:.1f} ms"
    return [c.what, f"{c.median_ms:.1f} ms", spread, c.samples, c.note]


def endings(result: DdpResult) -> str:
    return "\n".join(f"- **Run {i + 1}, {run.label}** ({run.wall_s:.1f} s): {run.ending()}."
                     for i, run in enumerate(result.runs))


def measured_on(result: DdpResult) -> str:
    return (f"{SCENARIOS[result.scenario].title} on {result.model}: {result.world_size} processes, torch.distributed "
            f"gloo on loopback, one core and one thread per rank, {machine.this_machine().line()}; each run a fresh "
            "start of the processes; times per step are the slowest rank's, spreads are quartiles over steps.")


def view_of(outcome: DdpOutcome) -> DdpView:
    result = outcome.result
    report = result.as_dict() | {"machine": machine.describe(), "endings": [run.ending() for run in result.runs]}
    return DdpView(f"{measured_on(result)} Model: {outcome.which}.", f"**Verdict**: {result.verdict}",
                   endings(result), [_cost_row(c) for c in result.costs], timeline_figure(result), report)


def format_ddp(report: dict[str, Any]) -> str:
    """The multi-process lab's report as text (`ddp` without --json)."""
    m = report["machine"]
    lines = [f"{report['scenario']} on {report['model']} {report['config']}, {report['world_size']} processes "
             f"(gloo, loopback, one core and thread each); {Machine.of(m).line()}"]
    for i, (run, ending) in enumerate(zip(report["runs"], report["endings"], strict=True)):
        lines.append(f"run {i + 1}: {run['label']} ({run['wall_s']:.1f} s)")
        lines.append(f"{'':<4}{ending}")
    for c in report["costs"]:
        spread = "" if c["samples"] == 1 else f" (IQR {c['q1_ms']:.1f}-{c['q3_ms']:.1f}, {c['samples']} samples)"
        lines.append(f"{c['what']}: {c['median_ms']:.1f} ms{spread}" + (f"  [{c['note']}]" if c["note"] else ""))
    lines.append(f"verdict: {report['verdict']}".replace("**", ""))
    return "\n".join(lines)
