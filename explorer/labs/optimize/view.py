"""The optimization lab's view as plain data: the recommendation, a row per strategy, the stream's timeline per
strategy (cumulative seconds against the request, compiles marked), the bucket plans, and the code that applies
the recommended strategy (the UI, the CLI and the API show it; tests call it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative

from explorer.core import machine
from explorer.core.machine import Machine
from explorer.draw.style import line_layout
from explorer.labs.contract import Kind, Output
from explorer.labs.optimize.results import OptimizeResult
from explorer.labs.optimize.snippet import snippet
from explorer.labs.optimize.strategies import STRATEGIES
from explorer.sources.edited import model_of

STRATEGY_COLUMNS = ("strategy", "serves the stream in (s)", "compiles (s)", "requests run compiled",
                    "after warm-up: p50 / p95 ms (IQR)", "warm, against eager", "catches up with eager at",
                    "padded", "peak memory (MB)", "max abs diff vs eager", "note")
PALETTE = qualitative.Plotly  # a strategy's line and its compile markers share a colour
PLAN_COLUMNS = ("plan", "boundaries", "compiles", "padded", "predicted to serve in (s)", "served in (s)")
OUTPUTS = (
    Output("recommendation", Kind.MARKDOWN),
    Output("strategies", Kind.TABLE, "per strategy, the whole stream", STRATEGY_COLUMNS,
           prose=("warm, against eager", "note")),
    Output("timeline", Kind.PLOT, "the stream served, per strategy"),
    Output("plans", Kind.TABLE, "bucket boundaries for this workload", PLAN_COLUMNS),
    Output("code", Kind.CODE, "the recommended strategy applied to your model"),
)


@dataclass
class OptimizeView:
    status: str
    recommendation: str
    strategies: list[list[Any]]
    timeline: go.Figure
    plans: list[list[Any]]
    code: str
    report: dict[str, Any]


def _row(r: dict[str, Any]) -> list[Any]:
    if r["skipped"] or (r["error"] and not r["requests"]):
        return [r["strategy"], *["—"] * 9, r["skipped"] or r["error"]]
    warm = (f"{r['p50_ms']:.3f} / {r['p95_ms']:.3f} ({r['iqr_ms']:.3f})" if r["iqr_ms"] is not None else
            f"{r['p50_ms']:.3f} / {r['p95_ms']:.3f}" if r["p50_ms"] is not None else "no request after its compiles")
    note = r["error"] or ("" if r["same_answers"] else "CHANGES ANSWERS: not ranked")
    read = f", {r['cache_hits']} of them read from the cache" if r["cache_hits"] or r["cache_misses"] else ""
    return [r["strategy"], f"{r['total_s']:.2f}", f"{r['compiles']} ({r['compile_s']:.2f}){read}",
            f"{r['compiled_requests']} of {r['requests']}" if r["strategy"] != "eager" else "—", warm,
            r["steady_vs_eager"]["said"] if r["steady_vs_eager"] else "—",
            f"request {r['catches_up_at']}" if r["catches_up_at"] else
            f"not within the stream: after {r['break_even_said']} requests at its warm saving "
            f"({r['compiles']} compiles, {r['compile_cache']})"
            if r["break_even_requests"] else "not within the stream",
            f"{r['padded_share']:.0%}" if r["padded_share"] is not None else "—", f"{r['peak_rss_mb']:,.0f}",
            f"{r['max_diff']:.1g}", note]


def timeline_figure(result: OptimizeResult) -> go.Figure:
    """Cumulative seconds against the request number, per strategy; a marker at each request that compiled."""
    fig = go.Figure()
    for i, s in enumerate(x for x in result.served if x.seconds):
        total, cumulative = s.build_s, []
        for x in s.seconds:
            total += x
            cumulative.append(total)
        color = PALETTE[i % len(PALETTE)]
        fig.add_scatter(x=list(range(1, len(cumulative) + 1)), y=cumulative, mode="lines", name=s.strategy,
                        line={"color": color})
        asked = sorted(c.at for c in s.compiles if c.at < len(cumulative))
        fig.add_scatter(x=[a + 1 for a in asked], y=[cumulative[a] for a in asked],
                        mode="markers", marker={"symbol": "x", "size": 8, "color": color}, showlegend=False,
                        name=f"{s.strategy}: compiled", hovertemplate="request %{x}: compiled<extra></extra>")
    return line_layout(fig, "Serving the stream: seconds so far (x: a request that compiled)", "request",
                       "seconds, compiles included")


def view_of(result: OptimizeResult) -> OptimizeView:
    report = result.as_dict() | {"machine": machine.describe()}
    done, c = len(result.served), result.costs
    where = "each in a fresh worker process" if result.fresh else "one after another in this process"
    status = (f"{result.model} on {result.workload.describe()}; {done} strateg{'y' if done == 1 else 'ies'} served "
              f"it, {where}, compiled with {result.backend}; "
              f"on {machine.this_machine().line()}. The planner's "
              f"weights: {c.said()}.")
    plans = [[name, ", ".join(map(str, p.boundaries)), len(p.boundaries), f"{p.padded_share:.0%}",
              f"{p.cost(result.costs):.2f}", f"{s:.2f}" if (s := result.served_with(name)) is not None else "—"]
             for name, p in result.plans.items()]
    fastest = result.fastest()
    code = ("# No strategy served this workload faster than the others by its interval: nothing to apply yet.\n"
            "# Serve a longer stream, or run bench/optimize.py, which serves each in fresh processes, order rotated.")
    if fastest:
        best = fastest.strategy
        pads = STRATEGIES[best].pads_to
        code = snippet(result.model, result.config, best, result.backend, model_of(result.model, result.config),
                       result.plans[pads].boundaries if pads else (),
                       (min(result.workload.lengths), max(result.workload.lengths)))
    return OptimizeView(status, result.recommendation(), [_row(r) for r in report["strategies"]],
                        timeline_figure(result), plans, code, report)


def format_optimize(report: dict[str, Any]) -> str:
    """The optimization lab's report as text (`optimize` without --json)."""
    lines = [f"{report['model']}, {report['workload']['described']}, backend {report['backend']}; "
             f"{Machine.of(report['machine']).line()}"]
    for r in report["strategies"]:
        row = _row(r)
        lines.append(f"{r['strategy']:<20} " + "; ".join(f"{c}: {v}" for c, v in zip(STRATEGY_COLUMNS[1:], row[1:],
                                                                                       strict=True) if v))
    lines.append(f"recommendation: {report['recommendation']}")
    return "\n".join(lines)
