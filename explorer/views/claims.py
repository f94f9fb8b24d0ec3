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
from explorer.claims.turns import Turn
from explorer.core.progress import Progress
from explorer.draw.style import PALETTE, category, headed, iqr_bars, wrapped
from explorer.workers.protocol import Workers


@dataclass
class ClaimView:
    status: str  # where and when it was measured
    figure: go.Figure
    numbers: list[tuple[str, str, str]]  # (label, value, detail): the card's three or four figures
    verdict: str  # markdown: the verdict, then what the figures are
    report: dict[str, Any]
    headline: str = ""  # markdown, one line: the verdict's kind (projected in large type)


AXIS_TITLE_CHARS = 26  # a side axis's title runs along a plot about 170 px high (a lesson's): in lines of this


def chart_figure(chart: Chart, height: int = 380) -> go.Figure:
    """Any claim's chart: bars or lines per series, IQR or interval bars where measured, a second axis and a
    baseline where asked."""
    fig = go.Figure()
    for i, s in enumerate(chart.series):
        color = PALETTE[i % len(PALETTE)]
        common: dict[str, Any] = {"x": [category(v) for v in s.x], "y": s.y, "name": s.name,
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
    fig.update_layout(
        height=height, barmode="group", plot_bgcolor="white",
        margin={"l": 62, "r": 62 if chart.y2_title else 20, "t": headed(fig, chart.title), "b": 60},
        uniformtext={"minsize": 12, "mode": "show"},  # a bar's label is never shrunk below the body text
        # level category labels (plotly tilts crowded ones onto each other), and a side axis's title in lines
        xaxis={"title": wrapped(chart.x_title), "type": "category", "tickangle": 0,
               "tickfont": {"size": 12}},
        # a log axis labels powers of ten only: plotly's 2s and 5s between them are drawn below the body's size
        # tick labels set off the axis: a first bar's label, wider than its bar, ran into the "100" beside it
        yaxis={"title": wrapped(chart.y_title, AXIS_TITLE_CHARS), "gridcolor": "#eee", "ticklabelstandoff": 10,
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


def view_of(result: ClaimResult) -> ClaimView:
    report = result.as_dict()
    notes = " ".join(f"{n[0].upper()}{n[1:]}." for n in result.evidence.notes[:1])
    kind = result.verdict.kind.value
    return ClaimView(result.label(), chart_figure(result.evidence.chart), result.evidence.shown,
                     f"{result.verdict.text()}\n\n<small>{notes}</small>", report,
                     f"**{kind[0].upper() + kind[1:]}**")  # "Holds", ..., "Not resolved on this machine today"


def claim_update(board: ClaimBoard, workers: Workers, claim_id: str, again: bool = False,
                 model: Chosen | None = None, turn: Turn = Turn.VISITOR) -> Iterator[Progress | ClaimView]:
    """Progress messages while the experiment runs (or waits for another visitor's run, or its `turn`), then the
    view; on a person's `model`, where the claim's experiment runs model by model."""
    for item in board.run(claim_id, workers, again, model, turn):
        yield item if isinstance(item, Progress) else view_of(item)


def cached_view(board: ClaimBoard, claim_id: str) -> ClaimView | None:
    """The claim's view from the server's board, if it was measured recently."""
    r = board.cached(claim(claim_id).id)
    return None if r is None else view_of(r)
