"""Plotly figures: the autograd graph of a run, and a session's history of runs.

Plotting only: every number drawn here was measured elsewhere and arrives in a RunResult.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

import plotly.graph_objects as go

from explorer.compile.observe import CompileEvent
from explorer.compile.track import CompiledRun
from explorer.core.limits import MAX_DRAWN_NODES
from explorer.draw.graph import draw_graph, fx_graph
from explorer.draw.layout import DrawNode, GraphLayout, layout_graph
from explorer.draw.style import PALETTE, Unchecked, iqr_bars, whole_ticks, wrapped
from explorer.draw.tree_layout import tree_layout
from explorer.runs.session import Captured, RunRecord, RunResult
from explorer.sources.registry import source


def graph_figure(result: RunResult | Captured, max_nodes: int = MAX_DRAWN_NODES, height: int = 560,
                 expand: str = "", lit: tuple[str, frozenset[int]] = ("", frozenset()),
                 line_of: Mapping[int, str] | None = None, heat: Mapping[int, float] | None = None) -> Unchecked:
    graph = result.capture.graph
    model = source(result.model)
    decided = ", ".join(f"{k} {v}" for k, v in model.structure(result.capture.trace).items())
    title = (f"Autograd graph: {len(graph.nodes)} nodes, {len(graph.edges)} edges ({{drawn}}); "
             f"{result.arch}, {result.tokens} tokens<br><sup>this input decided: {decided}; longest path "
             f"{graph.depth():,} operations</sup>")
    said = model.decision(result.config, result.input.ids[0].tolist())
    if said is not None:
        title += f"<br><sup>{html.escape(said if len(said) <= 110 else said[:109] + '…')}</sup>"
    if result.diff:
        title += f"<br><sup>red outline: +{result.diff.nodes_added} nodes vs {result.diff.label}</sup>"
    added = result.diff.added_ids if result.diff else frozenset()
    if lit[0]:
        title += f"<br><sup>ringed: the {len(lit[1])} nodes made at {html.escape(lit[0])}</sup>"
    if heat is not None:
        title += "<br><sup>coloured and sized by each node's profiled time, forward + backward</sup>"
    return draw_graph(graph, title, added, max_nodes, height, expand, graph_layout(result, max_nodes, expand),
                      result.capture.branches, lit=lit, line_of=line_of, heat=heat)


def graph_layout(result: RunResult | Captured, max_nodes: int = MAX_DRAWN_NODES, expand: str = "") -> GraphLayout:
    """Where each node of the run's graph is drawn, and which nodes are drawn as one (a module's group)."""
    graph, model = result.capture.graph, source(result.model)
    added = result.diff.added_ids if result.diff else frozenset()
    if model.tree and not expand:  # opening a module draws its nodes one by one, layered
        return tree_layout(graph, *model.tree, bytes(result.input.ids[0].tolist()), added)
    return layout_graph(graph, added, max_nodes, expand)


def drawn_node(result: RunResult | Captured, node: int, expand: str = "") -> DrawNode | None:
    """The node of the drawn figure that holds graph node `node` (a group holds many); None if none does."""
    return next((d for d in graph_layout(result, expand=expand).nodes if any(m.id == node for m in d.members)), None)



def fx_figure(event: CompileEvent, height: int = 460) -> Unchecked:
    """A graph dynamo captured (one compile event), drawn like the autograd graph."""
    kind = "symbolic" if event.dynamic else "static"
    title = (f"Captured FX graph {event.compile_id} of {event.frame} ({kind}, {event.ops} ops, "
             f"{{drawn}}), compiled for {event.length} tokens")
    return draw_graph(fx_graph(event.fx), title, height=height, colour_by="op kind")


HISTORY_TITLE_CHARS = 60  # the history sits in a column about 480 px wide: a longer line lost its ")"
LEGEND_ARCHS = 6  # architectures named in the history's legend; older ones are drawn in grey, unnamed


def history_figure(history: Iterable[RunRecord], height: int = 460) -> Unchecked:
    """Latency and memory against input length, one colour per architecture: forward solid, train step dotted.
    The latest LEGEND_ARCHS architectures are coloured and named (one legend entry each); older ones stay as grey
    context, so that the legend never takes over the plot. Built in one go from plain dicts, not validated (two
    stacked plots sharing the length axis): it is drawn after every run of every session (see style.Unchecked)."""
    runs = list(history)
    archs = list(dict.fromkeys(r.arch for r in reversed(runs)))  # the latest first
    traces = []
    for i, arch in enumerate(archs):
        named = i < LEGEND_ARCHS
        rs = sorted((r for r in runs if r.arch == arch), key=lambda r: r.tokens)
        color = PALETTE[i % len(PALETTE)] if named else "#c8c8c8"
        for m, dash in (("forward", "solid"), ("train_step", "dot")):
            ms = [getattr(r, m) for r in rs]
            traces.append({
                "type": "scatter", "xaxis": "x", "yaxis": "y",
                "x": [r.tokens for r in rs], "y": [x.median_ms for x in ms],
                "error_y": iqr_bars([x.median_ms for x in ms], [x.iqr_ms for x in ms]) if named else None,
                "mode": "lines+markers", "line": {"color": color, "dash": dash, "width": 2 if named else 1},
                "name": arch, "legendgroup": arch, "showlegend": named and m == "forward",
                "hovertemplate": "%{x} tokens: %{y:.3f} ms<extra>" + f"{arch} {m.replace('_', ' ')}</extra>",
            })
        with_mem = [r for r in rs if r.memory is not None]
        traces.append({
            "type": "scatter", "xaxis": "x2", "yaxis": "y2",
            "x": [r.tokens for r in with_mem], "y": [r.memory.train / 2**20 for r in with_mem],
            "mode": "lines+markers", "line": {"color": color, "width": 2 if named else 1}, "name": arch,
            "legendgroup": arch, "showlegend": False,
            "hovertemplate": "%{x} tokens: %{y:.2f} MiB<extra>" + arch + "</extra>",
        })
    threads = runs[-1].forward.threads if runs else 1
    older = f"; {len(archs) - LEGEND_ARCHS} older architecture(s) in grey" if len(archs) > LEGEND_ARCHS else ""
    longest = max((r.tokens for r in runs), default=1)
    ticks = whole_ticks(longest)
    top, bottom = [0.57, 1.0], [0.0, 0.43]  # two plots, 0.14 apart, the length axis shared

    def title(text: str, y: float) -> dict:
        return {"text": text, "x": 0.5, "y": y, "xref": "paper", "yref": "paper", "xanchor": "center",
                "yanchor": "bottom", "showarrow": False, "font": {"size": 12}}

    return Unchecked(traces, {
        "height": height, "margin": {"l": 10, "r": 10, "t": 60, "b": 30}, "plot_bgcolor": "white",
        "legend": {"font": {"size": 11}, "orientation": "h", "yanchor": "top", "y": -0.12},
        "title": {"text": wrapped(f"This session's runs (cpu, {threads} thread(s)){older}", HISTORY_TITLE_CHARS),
                  "font": {"size": 13}},
        "annotations": [title("eager latency: forward solid, train step dotted (median, bars = IQR)", top[1]),
                        title("peak memory of a train step", bottom[1])],
        "xaxis": {"anchor": "y", "domain": [0.0, 1.0], "matches": "x2", "showticklabels": False, **ticks},
        "xaxis2": {"anchor": "y2", "domain": [0.0, 1.0], "title": {"text": "input length (tokens)"},
                   "gridcolor": "#eee", **ticks},
        "yaxis": {"anchor": "x", "domain": top, "title": {"text": "ms"}, "gridcolor": "#eee", "rangemode": "tozero"},
        "yaxis2": {"anchor": "x2", "domain": bottom, "title": {"text": "MiB"}, "gridcolor": "#eee",
                   "rangemode": "tozero"},
    })


def compiled_figure(runs: Iterable[CompiledRun], height: int = 380) -> go.Figure:
    """Eager vs compiled latency against input length, for the latest model+options; compiles marked."""
    runs = list(runs)
    fig = go.Figure()
    if runs:
        last = runs[-1]
        same = sorted((r for r in runs if (r.arch, r.options) == (last.arch, last.options)), key=lambda r: r.length)
        for name, color in (("eager", "#1f77b4"), ("compiled", "#ff7f0e")):
            pts = [(r.length, getattr(r, name)) for r in same
                   if getattr(r, name) is not None and not (name == "compiled" and r.fallback)]
            fig.add_trace(go.Scatter(
                x=[x for x, _ in pts], y=[m.median_ms for _, m in pts], mode="lines+markers", name=name,
                line={"color": color}, error_y=iqr_bars([m.median_ms for _, m in pts], [m.iqr_ms for _, m in pts]),
                hovertemplate="%{x} tokens: %{y:.3f} ms<extra>" + name + "</extra>",
            ))
        fell = [r for r in same if r.fallback and r.compiled is not None]
        if fell:
            fig.add_trace(go.Scatter(
                x=[r.length for r in fell], y=[r.compiled.median_ms for r in fell], mode="markers",
                name="'compiled' that ran eagerly", marker={"symbol": "x", "size": 11, "color": "#7f7f7f"},
                text=[r.fallback for r in fell], hoverinfo="text",
            ))
        compiles = [r for r in same if r.compile_s > 0 and r.compiled is not None]
        fig.add_trace(go.Scatter(
            x=[r.length for r in compiles], y=[r.compiled.median_ms for r in compiles], mode="markers",
            name="compiled here", marker={"symbol": "star", "size": 15, "color": "#d62728"},
            text=[f"compiled {r.compile_s:.2f} s:<br>" + "<br>".join(e.reason for e in r.events) for r in compiles],
            hoverinfo="text",
        ))
        threads = last.compiled.threads if last.compiled else 1
        # the architecture on a line of its own: a long one ran past the plot's width and was cut
        title = (f"Eager vs compiled forward (cpu, {threads} thread(s); bars = IQR)<br><sup>"
                 f"{html.escape(last.arch)}, {html.escape(last.options.label())}</sup>")
        fig.update_xaxes(**whole_ticks(max(r.length for r in same)))  # a count of tokens has no 130.5
    else:
        title = "Eager vs compiled forward: switch on compiled execution to fill this in"
    fig.update_layout(height=height, title={"text": title, "font": {"size": 13}}, plot_bgcolor="white",
                      margin={"l": 10, "r": 10, "t": 60, "b": 30}, xaxis_title="input length (tokens)",
                      yaxis_title="ms", yaxis_rangemode="tozero")
    return fig
