"""The Claims tab's view as plain data: a claim's chart, its numbers, its verdict and where it was measured (the
app wires it, for the Claims tab and the lessons' cards alike; tests call it)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.claims.board import ClaimBoard, claim
from explorer.claims.chosen import Chosen
from explorer.claims.evidence import Chart, ClaimResult, Series
from explorer.compile.protocol import Workers
from explorer.core.progress import Progress
from explorer.draw.style import PALETTE, iqr_bars, wrapped


@dataclass
class ClaimView:
    status: str  # where and when it was measured
    figure: go.Figure
    numbers: list[tuple[str, str, str]]  # (label, value, detail): the card's three or four figures
    verdict: str  # markdown: the verdict, then what the figures are
    report: dict[str, Any]


AXIS_TITLE_CHARS = 26  # a side axis's title runs along a plot about 170 px high (a lesson's): in lines of this


def chart_figure(chart: Chart, height: int = 380) -> go.Figure:
    """Any claim's chart: bars or lines per series, IQR or interval bars where measured, a second axis and a
    baseline where asked."""
    fig = go.Figure()
    for i, s in enumerate(chart.series):
        color = PALETTE[i % len(PALETTE)]
        common: dict[str, Any] = {"x": [_tick(v) for v in s.x], "y": s.y, "name": s.name,
                                  "yaxis": "y2" if s.axis == "y2" else "y"}
        if bars := _error_bars(s):
            common["error_y"] = bars
        if chart.kind == "bar" and s.axis != "y2":
            fig.add_bar(marker_color=color, text=s.text, textposition="outside" if s.text else None, textangle=0,
                        textfont={"size": 12}, cliponaxis=False,
                        hovertemplate="%{x}: %{y:.4g}" + ("<br>%{text}" if s.text else "") + f"<extra>{s.name}</extra>",
                        **common)
        else:
            fig.add_scatter(mode="lines+markers", line={"color": color, "dash": "dot" if s.axis == "y2" else "solid"},
                            text=s.text, hovertemplate="%{x}: %{y:.4g}" + f"<extra>{s.name}</extra>", **common)
    columns = _legend_columns(chart)
    fig.update_layout(
        # the title from the top of the figure down (plotly centres it in the margin, onto the legend)
        title={"text": wrapped(chart.title), "font": {"size": 15}, "yref": "container", "y": 1, "yanchor": "top",
               "pad": {"t": 12}}, height=height, barmode="group",
        plot_bgcolor="white",
        # the legend above the plot, under the title (below it, it ran into the x axis's title), in columns
        margin={"l": 62, "r": 62 if chart.y2_title else 20, "t": _top(chart, columns), "b": 60},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "font": {"size": 12},
                **({"entrywidth": 1 / columns, "entrywidthmode": "fraction"} if columns > 1 else {})},
        uniformtext={"minsize": 12, "mode": "show"},  # a bar's label is never shrunk below the body text
        # level category labels (plotly tilts crowded ones onto each other), and a side axis's title in lines
        xaxis={"title": wrapped(chart.x_title), "type": "category", "tickangle": 0,
               "tickfont": {"size": 12}},
        # a log axis labels powers of ten only: plotly's 2s and 5s between them are drawn below the body's size
        yaxis={"title": wrapped(chart.y_title, AXIS_TITLE_CHARS), "gridcolor": "#eee",
               "type": "log" if chart.log_y else "linear", **({"dtick": 1} if chart.log_y else {})},
        font={"size": 13})
    if chart.y2_title:
        fig.update_layout(yaxis2={"title": wrapped(chart.y2_title, AXIS_TITLE_CHARS), "overlaying": "y",
                                  "side": "right", "rangemode": "tozero", "showgrid": False,
                                  "ticklabelstandoff": 6})  # its 0 ran into the last category's label
    if chart.baseline is not None:
        fig.add_hline(y=chart.baseline, line_dash="dash", line_color="#888", line_width=1)
    return fig


def _error_bars(s: Series) -> dict[str, Any] | None:
    if s.low is not None and s.high is not None:  # an interval around the value, not symmetric
        y = [v or 0.0 for v in s.y]
        return {"type": "data", "symmetric": False, "visible": True,
                "array": [(h or v) - v for v, h in zip(y, s.high, strict=True)],
                "arrayminus": [v - (lo or v) for v, lo in zip(y, s.low, strict=True)]}
    return None if s.spread is None else iqr_bars([v or 0.0 for v in s.y], s.spread)


def _tick(category: Any, width: int = 14) -> str:
    """A category's label in lines of about `width` characters, a long identifier cut after its underscores
    ("find_unused_<br>parameters=True"): side by side, long labels ran into each other."""
    words = str(category).replace("_", "_ ").split()
    return wrapped(" ".join(words), width).replace("_ ", "_")


LEGEND_PX = 330  # the legend's width in a lesson's chart (about 420 px wide): the narrowest it is drawn


def _legend_columns(chart: Chart) -> int:
    """As many legend entries side by side as the widest fits (6.5 px a character at 12 px, with its symbol)."""
    widest = max((int(6.5 * len(s.name)) + 40 for s in chart.series), default=1)
    return max(1, min(len(chart.series), LEGEND_PX // widest))


def _top(chart: Chart, columns: int) -> int:
    """The top margin that holds the wrapped title and the legend's rows: neither overlaps the other or the plot."""
    title_lines = wrapped(chart.title).count("<br>") + 1
    return 30 + 22 * title_lines + 22 * -(-len(chart.series) // columns)


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
