"""The charts' shared style: the palette, wrapped titles, IQR error bars, whole-number ticks, a bar chart's layout."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative

PALETTE = qualitative.Dark24 + qualitative.Light24


def wrapped(text: str, width: int = 46) -> str:
    """Text in lines of at most `width` characters (plotly does not wrap titles or tick labels, and clips them)."""
    lines = [""]
    for word in text.split():
        lines[-1:] = [f"{lines[-1]} {word}".strip()] if len(lines[-1]) + len(word) < width else [lines[-1], word]
    return "<br>".join(lines)


def iqr_bars(medians: list[float], iqrs: list[float]) -> dict[str, Any]:
    """Error bars of one IQR around each median, cut at zero below: a time is never negative."""
    below = [min(i, m) for m, i in zip(medians, iqrs, strict=True)]
    return {"type": "data", "symmetric": False, "array": iqrs, "arrayminus": below, "visible": True}


def bar_layout(fig: go.Figure, title: str, y_title: str, height: int) -> go.Figure:
    """A lab bar chart: its title and its category labels wrapped to fit (long strategy names would be clipped
    or tilted), the legend above the bars."""
    fig.update_layout(height=height, barmode="group", plot_bgcolor="white",
                      legend={"font": {"size": 11}, "orientation": "h", "yanchor": "bottom", "y": 1.0},
                      margin={"l": 10, "r": 10, "t": 80, "b": 30},
                      title={"text": wrapped(title, 70), "font": {"size": 13}})
    fig.for_each_trace(lambda t: t.update(x=[wrapped(str(x), 14) for x in t.x]) if t.type == "bar" else None)
    fig.update_yaxes(title_text=y_title, gridcolor="#eee", rangemode="tozero")
    return fig


def whole_ticks(top: float, ticks: int = 6) -> dict[str, Any]:
    """Axis ticks on whole numbers only (a count of tokens or sentences has no 41.5)."""
    return {"tick0": 0, "dtick": max(1, math.ceil(top / ticks)), "tickformat": ",d"}

