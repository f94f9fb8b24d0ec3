"""The batching lab's figures: the batch's lengths, each strategy's latency, and the work padding wastes."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import plotly.graph_objects as go

from explorer.core.machine import Machine
from explorer.draw.style import bar_layout, iqr_bars, whole_ticks


def lab_lengths_figure(report: dict[str, Any], height: int = 300) -> go.Figure:
    """Histogram of the batch's sentence lengths (about 30 bins of whole tokens)."""
    lengths = report["lengths"]
    low, high = min(lengths), max(lengths)
    size = max(1, math.ceil((high - low + 1) / 30))
    counts = Counter((n - low) // size for n in lengths)
    fig = go.Figure(go.Histogram(x=lengths, xbins={"start": low - 0.5, "end": high + 0.5, "size": size},
                                 marker_color="#1f77b4", hovertemplate="%{x} tokens: %{y} sentences<extra></extra>"))
    bar_layout(fig, f"{report['sentences']} sentences, {report['tokens']} tokens", "sentences", height)
    fig.update_xaxes(title_text="length (tokens)", **whole_ticks(high))
    fig.update_yaxes(**whole_ticks(max(counts.values())))
    return fig


def lab_time_figure(report: dict[str, Any], height: int = 360) -> go.Figure:
    """Median latency per strategy, eager and compiled, forward and train step; error bars are the IQR."""
    ran = [s for s in report["strategies"] if s["supported"]]
    fig = go.Figure()
    series = [("eager forward", None, "forward", "#1f77b4"), ("eager train step", None, "train_step", "#aec7e8"),
              ("compiled forward", "compiled", "forward", "#ff7f0e"),
              ("compiled train step", "compiled", "train_step", "#ffbb78")]
    for label, side, what, color in series:
        rows = [(s["title"], (s[side] if side else s)) for s in ran]
        rows = [(t, d) for t, d in rows if d and d.get(f"{what}_ms") is not None
                and not (side and (d["fallback"] or d["error"]))]
        if rows:
            fig.add_trace(go.Bar(
                name=label, x=[t for t, _ in rows], y=[d[f"{what}_ms"] for _, d in rows], marker_color=color,
                error_y=iqr_bars([d[f"{what}_ms"] for _, d in rows], [d[f"{what}_iqr_ms"] for _, d in rows]),
                hovertemplate="%{x}: %{y:.2f} ms<extra>" + label + "</extra>"))
    return bar_layout(fig, f"Latency of the whole batch (median, bars = IQR; {Machine.of(report['machine']).line()})",
                      "ms", height)


def lab_waste_figure(report: dict[str, Any], height: int = 360) -> go.Figure:
    """Share of positions that are padding, and share of FLOPs spent beyond the loop's, per strategy. A negative
    share is a strategy that computes less than the loop (e.g. a batch that exits early for every sentence)."""
    ran = [s for s in report["strategies"] if s["supported"]]
    by_construction = {"loop": "no pads by construction", "pack": "packed: no pads by construction",
                       "nested": "jagged: no pads by construction"}
    wasted = [100 * (1 - s["flops_useful"] / s["flops_total"]) if s["flops_total"] else None for s in ran]
    fig = go.Figure([
        go.Bar(name="padding share of computed positions", x=[s["title"] for s in ran],
               y=[100 * s["padding_fraction"] for s in ran], marker_color="#d62728",
               customdata=[by_construction.get(s["name"], "counted") for s in ran],
               hovertemplate="%{x}: %{y:.1f}% pads (%{customdata})<extra></extra>"),
        go.Bar(name="FLOPs beyond the loop's (share of the strategy's)", x=[s["title"] for s in ran], y=wasted,
               marker_color="#9467bd",
               customdata=[f"{s['flops_total'] / 1e9:.3f} GFLOP" if s["flops_total"] else "not counted" for s in ran],
               hovertemplate="%{x}: %{y:.1f}% beyond the loop, %{customdata}<extra></extra>"),
    ])
    return bar_layout(fig, "Wasted work (FLOPs from torch.utils.flop_counter; below 0: less than the loop)", "%",
                       height)
