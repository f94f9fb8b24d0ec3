"""The charts' shared style: the palette, wrapped titles and category labels, a title and legend above the plot, IQR
error bars, whole-number ticks, a bar chart's layout."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import orjson
import plotly.graph_objects as go
from plotly.colors import qualitative

PALETTE = qualitative.Dark24 + qualitative.Light24


class Unchecked:
    """A figure of plain dicts, sent as they are: the graph and the history are drawn for every run of every session,
    and plotly's validation, then the deep copies its Figure makes of every trace when built and again in
    `to_json`, cost the server more CPU than drawing them (bench/RESULTS-load.md, the class runs' CPU by phase).
    Gradio's plot asks only for `to_json`; anything else asked of it (a title read, an update, `to_html`) is asked of
    the plotly Figure these dicts make, built once then (not validated), which is what is sent from then on.
    The tests validate every figure built here and compare its JSON with plotly's (tests/views/test_graph_figure.py)."""

    def __init__(self, data: list[dict[str, Any]], layout: dict[str, Any]) -> None:
        self._traces, self._layout = data, layout
        self._figure: go.Figure | None = None

    @property
    def figure(self) -> go.Figure:
        if self._figure is None:
            self._figure = go.Figure(data=self._traces, layout=self._layout, _validate=False)
        return self._figure

    def to_json(self) -> str:
        if self._figure is not None:  # asked something of, perhaps changed: plotly's own
            return self._figure.to_json()
        layout = {**self._layout, "template": _template()} if "template" not in self._layout else self._layout
        return orjson.dumps({"data": self._traces, "layout": layout}, option=orjson.OPT_SERIALIZE_NUMPY).decode()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and not name.startswith(("_repr_", "_ipython_")):  # but a notebook's display hooks:
            raise AttributeError(name)  # not the figure's (copying or pickling asks, before __init__ has run)
        return getattr(self.figure, name)


@lru_cache(maxsize=1)
def _template() -> dict[str, Any]:
    """The default template a plotly Figure writes into its layout (plotly.js draws with it)."""
    return go.Figure().to_plotly_json()["layout"]["template"]


Figure = go.Figure | Unchecked  # what a plot is given: plotly's Figure, or the dicts of one


def wrapped(text: str, width: int = 46) -> str:
    """Text in lines of at most `width` characters (plotly does not wrap titles or tick labels, and clips them)."""
    lines = [""]
    for word in text.split():
        lines[-1:] = [f"{lines[-1]} {word}".strip()] if len(lines[-1]) + len(word) < width else [lines[-1], word]
    return "<br>".join(lines)


def category(value: Any, width: int = 14) -> str:
    """A category's label in lines of about `width` characters, a long identifier cut after its underscores
    ("find_unused_<br>parameters=True"): side by side, long labels ran into each other."""
    words = str(value).replace("_", "_ ").split()
    return wrapped(" ".join(words), width).replace("_ ", "_")


def iqr_bars(medians: list[float], iqrs: list[float]) -> dict[str, Any]:
    """Error bars of one IQR around each median, cut at zero below: a time is never negative."""
    below = [min(i, m) for m, i in zip(medians, iqrs, strict=True)]
    return {"type": "data", "symmetric": False, "array": iqrs, "arrayminus": below, "visible": True}


GRADIO_LABEL_PX = 34  # the label Gradio draws over a plot's top-left corner
LEGEND_PX = 330  # the narrowest a legend is drawn (a lesson's chart, about 420 px wide)


def headed(fig: go.Figure, title: str, title_chars: int = 46, under_px: int = 0) -> int:
    """`fig`'s title from the top of the figure down (plotly centres it in the top margin, onto the legend), `under_px`
    below what the page draws over the figure (a Gradio plot's label), and its legend under it, above the plot
    (below, it ran into the x axis's title), in as many columns as its widest entry allows at 12 px (6.5 px a
    character, with its symbol); returns the top margin that holds them apart."""
    names = [t.name for t in fig.data if t.name and t.showlegend is not False]
    widest = max((int(6.5 * len(n)) + 40 for n in names), default=1)
    columns = max(1, min(len(names), LEGEND_PX // widest))
    text = wrapped(title, title_chars)
    fig.update_layout(
        title={"text": text, "font": {"size": 15}, "yref": "container", "y": 1, "yanchor": "top",
               "pad": {"t": 12 + under_px}},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "font": {"size": 12},
                **({"entrywidth": 1 / columns, "entrywidthmode": "fraction"} if columns > 1 else {})})
    legend_rows = -(-len(names) // columns) if len(names) > 1 else 0  # one series: no legend drawn
    return 30 + under_px + 22 * (text.count("<br>") + 1) + 22 * legend_rows


def bar_layout(fig: go.Figure, title: str, y_title: str, height: int) -> go.Figure:
    """A lab bar chart: its title and legend above the bars (`headed`), its category labels wrapped and level
    (long strategy names would be clipped, or tilted onto each other)."""
    top = headed(fig, title, under_px=GRADIO_LABEL_PX)
    fig.update_layout(height=height, barmode="group", plot_bgcolor="white", font={"size": 13},
                      margin={"l": 10, "r": 10, "t": top, "b": 30})
    fig.for_each_trace(lambda t: t.update(x=[category(x) for x in t.x]) if t.type == "bar" else None)
    fig.update_xaxes(tickangle=0, tickfont={"size": 12})
    fig.update_yaxes(title_text=y_title, gridcolor="#eee", rangemode="tozero")
    return fig


def line_layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 380) -> go.Figure:
    """A lab line chart: its title and legend above the lines (`headed`), clear of Gradio's label."""
    top = headed(fig, title, under_px=GRADIO_LABEL_PX)
    fig.update_layout(height=height, plot_bgcolor="white", font={"size": 13},
                      margin={"l": 10, "r": 10, "t": top, "b": 40})
    fig.update_xaxes(title_text=x_title, gridcolor="#eee")
    fig.update_yaxes(title_text=y_title, gridcolor="#eee", rangemode="tozero")
    return fig


def whole_ticks(top: float, ticks: int = 6) -> dict[str, Any]:
    """Axis ticks on whole numbers only (a count of tokens or sentences has no 41.5)."""
    return {"tick0": 0, "dtick": max(1, math.ceil(top / ticks)), "tickformat": ",d"}

