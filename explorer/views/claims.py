"""The Claims tab's view as plain data: a claim's chart, its numbers, its verdict and where it was measured (the
app wires it, for the Claims tab and the lessons' cards alike; tests call it)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.claims.board import ClaimBoard, claim
from explorer.claims.chosen import Chosen
from explorer.claims.evidence import Chart, ClaimResult
from explorer.compile.protocol import Workers
from explorer.core.progress import Progress
from explorer.draw.style import PALETTE, iqr_bars, wrapped


@dataclass
class ClaimView:
    status: str  # where and when it was measured
    figure: go.Figure | None
    numbers: list[tuple[str, str, str]]  # (label, value, detail): the card's three or four figures
    verdict: str  # markdown: the verdict, then what the figures are
    report: dict[str, Any]


def chart_figure(chart: Chart, height: int = 380) -> go.Figure:
    """Any claim's chart: bars or lines per series, IQR bars where measured, a second axis where asked."""
    fig = go.Figure()
    for i, s in enumerate(chart.series):
        color = PALETTE[i % len(PALETTE)]
        common: dict[str, Any] = {"x": [_tick(v) for v in s.x], "y": s.y, "name": s.name,
                                  "yaxis": "y2" if s.axis == "y2" else "y"}
        if s.spread is not None:
            common["error_y"] = iqr_bars([v or 0.0 for v in s.y], s.spread)
        if chart.kind == "bar" and s.axis != "y2":
            fig.add_bar(marker_color=color, text=s.text, textposition="outside" if s.text else None, textangle=0,
                        textfont={"size": 12}, cliponaxis=False,
                        hovertemplate="%{x}: %{y:.4g}" + ("<br>%{text}" if s.text else "") + f"<extra>{s.name}</extra>",
                        **common)
        else:
            fig.add_scatter(mode="lines+markers", line={"color": color, "dash": "dot" if s.axis == "y2" else "solid"},
                            text=s.text, hovertemplate="%{x}: %{y:.4g}" + f"<extra>{s.name}</extra>", **common)
    fig.update_layout(
        # the title from the top of the figure down (plotly centres it in the margin, onto the legend)
        title={"text": wrapped(chart.title), "font": {"size": 15}, "yref": "container", "y": 1, "yanchor": "top",
               "pad": {"t": 12}}, height=height, barmode="group",
        plot_bgcolor="white",
        # the legend above the plot, under the title: below it, it ran into the x axis's title
        margin={"l": 70, "r": 70 if chart.y2_title else 20, "t": _top(chart), "b": 60},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "font": {"size": 12}},
        uniformtext={"minsize": 12, "mode": "show"},  # a bar's label is never shrunk below the body text
        xaxis={"title": chart.x_title, "type": "category"},
        yaxis={"title": chart.y_title, "type": "log" if chart.log_y else "linear", "gridcolor": "#eee"},
        font={"size": 13})
    if chart.y2_title:
        fig.update_layout(yaxis2={"title": chart.y2_title, "overlaying": "y", "side": "right", "rangemode": "tozero",
                                  "showgrid": False})
    return fig


def _tick(category: Any, width: int = 14) -> str:
    """A category's label in lines of about `width` characters, a long identifier cut after its underscores
    ("find_unused_<br>parameters=True"): side by side, long labels ran into each other."""
    words = str(category).replace("_", "_ ").split()
    return wrapped(" ".join(words), width).replace("_ ", "_")


def _top(chart: Chart, width_px: int = 560) -> int:
    """The top margin that holds the wrapped title and the legend's rows (about 8 px a character at 12 px, with
    its symbol): neither overlaps the other or the plot."""
    title_lines = wrapped(chart.title).count("<br>") + 1
    legend_px = sum(8 * len(s.name) + 40 for s in chart.series)
    return 30 + 22 * title_lines + 22 * -(-legend_px // width_px)


def view_of(result: ClaimResult) -> ClaimView:
    report = result.as_dict()
    notes = " ".join(f"{n[0].upper()}{n[1:]}." for n in result.evidence.notes[:1])
    return ClaimView(result.label(), chart_figure(result.evidence.chart), result.evidence.shown,
                     f"{result.verdict.text()}\n\n<small>{notes}</small>", report)


def claim_update(board: ClaimBoard, workers: Workers, claim_id: str, again: bool = False,
                 model: Chosen | None = None) -> Iterator[Progress | ClaimView]:
    """Progress messages while the experiment runs (or waits for another visitor's run), then the view; on a
    person's `model`, where the claim's experiment runs model by model."""
    for item in board.run(claim_id, workers, again, model):
        yield item if isinstance(item, Progress) else view_of(item)


def cached_view(board: ClaimBoard, claim_id: str) -> ClaimView | None:
    """The claim's view from the server's board, if it was measured recently."""
    r = board.cached(claim(claim_id).id)
    return None if r is None else view_of(r)
