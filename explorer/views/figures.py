"""Plotly figures: the autograd graph of a run, and a session's history of runs.

Plotting only: every number drawn here was measured elsewhere and arrives in a RunResult.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative

from explorer.compile.observe import CompileEvent, FxNode
from explorer.compile.track import CompiledRun
from explorer.core.fmt import count, format_bytes
from explorer.core.limits import MAX_DRAWN_NODES
from explorer.eager.graph import AutogradGraph, GraphNode
from explorer.session import Captured, RunRecord, RunResult
from explorer.views.layout import DrawNode, GraphLayout, layout_graph, module_color_keys, short_label, step_ticks
from explorer.views.tree_layout import tree_layout
from models import entry
from models.branch import Branch

PALETTE = qualitative.Dark24 + qualitative.Light24
_ADDED = "#d62728"


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


def _hover(d: DrawNode) -> str:
    first = d.members[0]
    if len(d.members) == 1:
        lines = [f"<b>{first.param or first.op}</b>", f"module: {first.module} (call {first.call})"]
        if first.shape is not None:
            lines.append(f"output: {list(first.shape)} {first.dtype}")
        for s in first.saved[:6]:
            tag = " (parameter)" if s.is_param else ""
            lines.append(f"saved {s.name}: {list(s.shape)} {s.dtype}, {format_bytes(s.bytes)}{tag}")
        if len(first.saved) > 6:
            lines.append(f"... {len(first.saved) - 6} more saved tensors")
    else:
        lines = [f"<b>{d.label}</b>", f"{len(d.members)} nodes grouped"]
        ops: dict[str, int] = {}
        for m in d.members:
            ops[m.op] = ops.get(m.op, 0) + 1
        lines += [f"{n} x {op}" for op, n in sorted(ops.items(), key=lambda kv: -kv[1])[:6]]
    lines.append(f"saved by these nodes: {format_bytes(d.saved_bytes)}")
    if d.added:
        lines.append(f"<b>added vs comparison: {d.added}</b>")
    return "<br>".join(lines)


MAX_GRAPH_LABELS = 8  # group labels drawn on a graph; more would cover each other


def _legend_name(group: str, nodes: list[DrawNode]) -> str:
    """'cell: 42 steps, 1,008 nodes': what a colour is, and how much of the graph it made."""
    ops = [m for d in nodes for m in d.members if not m.is_param]
    steps = max(Counter(module for module, _ in {(m.module, m.call) for m in ops}).values(), default=0)
    said = f"{steps} steps, " if steps > 1 else ""
    return f"{group or '(model)'}: {said}{count(len(ops), 'node')}" if ops else f"{group or '(model)'}: parameters"


def _labels(lay: GraphLayout, ticked: str) -> list[str]:
    """The text drawn beside nodes: each colour group's name once, at its last node (so that the blocks that ran,
    early exit's depth, can be read off the figure); for a collapsed graph, the first and last group of the module
    the axis counts (`ticked`), with their steps; shared parameters with their number of uses."""
    labels = [""] * len(lay.nodes)
    groups = module_color_keys(lay.nodes)
    if len(groups) <= MAX_GRAPH_LABELS * 3:
        for group, idx in groups.items():
            labels[max(idx, key=lambda j: lay.nodes[j].y if lay.direction == "up" else lay.nodes[j].x)] = (
                group or "model")
    if lay.collapsed and ticked:
        calls = len({m.call for d in lay.nodes for m in d.members if m.module == ticked})
        on_axis = sorted((i for i, d in enumerate(lay.nodes) if d.module == ticked and not d.is_param),
                         key=lambda i: lay.nodes[i].x)
        for i in on_axis[:1] + on_axis[-1:]:
            labels[i] = short_label(lay.nodes[i], calls)
    for i, uses in lay.shared.items():
        labels[i] = f"{lay.nodes[i].label.split(' (')[0]} (shared: {uses} uses)"
    return labels


def _branch_traces(lay: GraphLayout, branches: Iterable[Branch]) -> list[dict]:
    """Each decision the forward took from the data, as a diamond after the module it followed, its numbers beside
    it; the modules the exit skipped as hollow grey nodes on a dashed path leaving the exit: the path not taken."""
    marks, lines, ghosts = [], {"x": [], "y": []}, []
    xs, ys = [d.x for d in lay.nodes] or [0.0], [d.y for d in lay.nodes] or [0.0]
    dx, dy = max(1.0, (max(xs) - min(xs)) / 12), max(1.0, (max(ys) - min(ys)) / 8)  # a step on the figure
    for b in branches:
        at = [d for d in lay.nodes if d.module == b.after or d.module.startswith(b.after + ".")]
        if not at:
            continue
        anchor = max(at, key=lambda d: d.x)
        x, y = anchor.x + dx / 4, anchor.y
        marks.append((x, y, b))
        path = [(x, y)] + [(x + k * dx, y - dy) for k in range(1, len(b.skipped) + 1)]
        ghosts += [(*p, m) for p, m in zip(path[1:], b.skipped, strict=True)]
        lines["x"] += [p[0] for p in path] + [None]
        lines["y"] += [p[1] for p in path] + [None]
    if not marks:
        return []
    traces = [{"type": "scatter", "x": [x for x, _, _ in marks], "y": [y for _, y, _ in marks],
               "mode": "markers+text", "name": "decision taken from the data",
               "marker": {"symbol": "diamond", "size": 15, "line": {"width": 2, "color": "#d62728"},
                          "color": ["#d62728" if b.exits else "#fff" for *_, b in marks]},
               "text": [html.escape(b.said) for *_, b in marks], "hoverinfo": "text",
               "texttemplate": [html.escape(b.mark) for *_, b in marks], "textposition": "bottom center",
               "textfont": {"size": 11, "color": "#a00"}, "cliponaxis": False}]
    if ghosts:
        traces += [{"type": "scatter", **lines, "mode": "lines", "line": {"dash": "dash", "color": "#999", "width": 1},
                    "hoverinfo": "skip", "showlegend": False},
                   {"type": "scatter", "x": [x for x, _, _ in ghosts], "y": [y for _, y, _ in ghosts],
                    "mode": "markers+text", "name": "not run (the exit skipped it)",
                    "marker": {"symbol": "circle-open", "size": 14, "color": "#999"},
                    "text": [f"{m}: not run, the forward exited before it" for *_, m in ghosts], "hoverinfo": "text",
                    "texttemplate": [m for *_, m in ghosts],  # alternating sides: the names are wider than a step
                    "textposition": ["bottom center", "top center"] * len(ghosts),
                    "textfont": {"size": 11, "color": "#777"}, "cliponaxis": False}]
    return traces


def draw_graph(graph: AutogradGraph, title: str, added: frozenset[int] = frozenset(),
               max_nodes: int = MAX_DRAWN_NODES, height: int = 560, expand: str = "",
               lay: GraphLayout | None = None, branches: Iterable[Branch] = ()) -> go.Figure:
    """Any graph of GraphNodes (autograd, or a compiled FX graph) drawn layered, forward from left to right (or as
    a given layout, a parse tree upwards), each module a colour named in the legend with its count, groups and
    modules labelled on the figure, shared parameters drawn once, and the repeated structure's steps on the axis."""
    lay = lay or layout_graph(graph, added, max_nodes, expand)
    ex, ey = [], []
    for a, b in lay.edges:
        na, nb = lay.nodes[a], lay.nodes[b]
        ex += [na.x, nb.x, None]
        ey += [na.y, nb.y, None]
    # Plain dicts, one Figure built at once: trace-by-trace construction validated each (the server draws a
    # graph for every run of every session).
    traces = [{"type": "scatter", "x": ex, "y": ey, "mode": "lines", "line": {"width": 0.6, "color": "#aab"},
               "hoverinfo": "skip", "showlegend": False}]
    ticked, tickvals, ticktext = step_ticks(lay) if lay.direction == "right" else ("", [], [])
    labels = _labels(lay, ticked)
    groups = sorted(module_color_keys(lay.nodes).items(),  # most nodes first
                    key=lambda kv: (-sum(len(lay.nodes[j].members) for j in kv[1]), kv[0]))
    param_text = "middle right" if lay.direction == "right" else "top right"  # beside the path, or above the column
    for i, (module, idx) in enumerate(groups):
        nodes = [lay.nodes[j] for j in idx]
        traces.append({
            "type": "scatter", "x": [d.x for d in nodes], "y": [d.y for d in nodes], "mode": "markers+text",
            "name": _legend_name(module, nodes),
            "marker": {
                "size": [min(22, 8 + 2 * len(d.members) ** 0.5) for d in nodes],
                "color": PALETTE[i % len(PALETTE)],
                "symbol": ["square" if d.is_param else "circle" for d in nodes],
                "line": {"width": [3 if d.added else 0.5 for d in nodes],
                         "color": [_ADDED if d.added else "#333" for d in nodes]},
            },
            "text": [_hover(d) for d in nodes], "hoverinfo": "text", "texttemplate": [labels[j] for j in idx],
            "textposition": [param_text if d.is_param else "top center" for d in nodes],
            "textfont": {"size": 11, "color": "#333"}, "cliponaxis": False,
        })
    traces += _branch_traces(lay, branches)
    if lay.words:
        traces.append({"type": "scatter", "x": [x for x, _, _ in lay.words], "y": [y for _, y, _ in lay.words],
                       "mode": "text", "text": [w for _, _, w in lay.words], "hoverinfo": "skip",
                       "textfont": {"size": 12, "color": "#111"}, "cliponaxis": False, "name": "the words",
                       "showlegend": False})
    drawn = f"{len(lay.nodes)} drawn" if not lay.collapsed else (
        f"collapsed {lay.grouping}: {len(lay.nodes)} groups drawn")
    if lay.expanded:
        drawn += f", {lay.expanded} opened"
    if lay.direction == "up":
        axis = "forward ↑  (the words at the bottom, each composition above the two it joins, the output on top)"
    elif tickvals:
        axis = f"forward →  ticks: {ticked}, step (call) number"
    else:
        axis = "forward →  (inputs and parameters on the left, output on the right)"
    return go.Figure(data=traces, layout={
        "title": {"text": title.replace("{drawn}", drawn), "font": {"size": 14}},
        "height": height, "margin": {"l": 10, "r": 10, "t": 30 + 20 * (title.count("<br>") + 1), "b": 40},
        "plot_bgcolor": "white",
        "legend": {"title": {"text": "module (most nodes first)"}, "itemsizing": "constant"},
        "hoverlabel": {"align": "left"},
        "xaxis": {"title": {"text": axis}, "showgrid": bool(tickvals), "gridcolor": "#f0f0f0", "zeroline": False,
                  "showticklabels": bool(tickvals), "tickvals": tickvals, "ticktext": ticktext},
        "yaxis": {"visible": False},
    })


def graph_figure(result: RunResult | Captured, max_nodes: int = MAX_DRAWN_NODES, height: int = 560,
                 expand: str = "") -> go.Figure:
    graph = result.capture.graph
    model = entry(result.model)
    decided = ", ".join(f"{k} {v}" for k, v in model.structure(result.capture.trace).items())
    title = (f"Autograd graph: {len(graph.nodes)} nodes, {len(graph.edges)} edges ({{drawn}}); "
             f"{result.arch}, {result.tokens} tokens<br><sup>this input decided: {decided}; longest path "
             f"{graph.depth():,} operations</sup>")
    if model.decision is not None:
        said = model.decision(result.config, result.input.ids[0].tolist())
        title += f"<br><sup>{html.escape(said if len(said) <= 110 else said[:109] + '…')}</sup>"
    if result.diff:
        title += f"<br><sup>red outline: +{result.diff.nodes_added} nodes vs {result.diff.label}</sup>"
    added = result.diff.added_ids if result.diff else frozenset()
    lay = None
    if model.tree and not expand:  # opening a module draws its nodes one by one, layered
        lay = tree_layout(graph, *model.tree, bytes(result.input.ids[0].tolist()), added)
    return draw_graph(graph, title, added, max_nodes, height, expand, lay, result.capture.branches)


def fx_graph(nodes: tuple[FxNode, ...]) -> AutogradGraph:
    """An FX graph in the shape the graph renderer draws (its op kind stands where a module would)."""
    index = {n.name: i for i, n in enumerate(nodes)}
    graph_nodes = [GraphNode(i, n.target, n.op, 0, None, None) for i, n in enumerate(nodes)]
    edges = [(index[a], index[n.name]) for n in nodes for a in n.inputs if a in index]
    return AutogradGraph(graph_nodes, edges, len(nodes) - 1)


def fx_figure(event: CompileEvent, height: int = 460) -> go.Figure:
    """A graph dynamo captured (one compile event), drawn like the autograd graph."""
    kind = "symbolic" if event.dynamic else "static"
    title = (f"Captured FX graph {event.compile_id} of {event.frame} ({kind}, {event.ops} ops, "
             f"{{drawn}}), compiled for {event.length} tokens")
    return draw_graph(fx_graph(event.fx), title, height=height)


LEGEND_ARCHS = 6  # architectures named in the history's legend; older ones are drawn in grey, unnamed


def history_figure(history: Iterable[RunRecord], height: int = 460) -> go.Figure:
    """Latency and memory against input length, one colour per architecture: forward solid, train step dotted.
    The latest LEGEND_ARCHS architectures are coloured and named (one legend entry each); older ones stay as grey
    context, so that the legend never takes over the plot. Built in one go from plain dicts (two stacked plots
    sharing the length axis): drawn after every run of every session, trace-by-trace construction cost the
    server several times more."""
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

    return go.Figure(data=traces, layout={
        "height": height, "margin": {"l": 10, "r": 10, "t": 60, "b": 30}, "plot_bgcolor": "white",
        "legend": {"font": {"size": 11}, "orientation": "h", "yanchor": "top", "y": -0.12},
        "title": {"text": f"This session's runs (cpu, {threads} thread(s)){older}", "font": {"size": 13}},
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
        title = (f"Eager vs compiled forward: {last.arch}, {last.options.label()} "
                 f"(cpu, {threads} thread(s); bars = IQR)")
    else:
        title = "Eager vs compiled forward: switch on compiled execution to fill this in"
    fig.update_layout(height=height, title={"text": title, "font": {"size": 13}}, plot_bgcolor="white",
                      margin={"l": 10, "r": 10, "t": 40, "b": 30}, xaxis_title="input length (tokens)",
                      yaxis_title="ms", yaxis_rangemode="tozero")
    return fig


def _bar_layout(fig: go.Figure, title: str, y_title: str, height: int) -> go.Figure:
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


def lab_lengths_figure(report: dict[str, Any], height: int = 300) -> go.Figure:
    """Histogram of the batch's sentence lengths (about 30 bins of whole tokens)."""
    lengths = report["lengths"]
    low, high = min(lengths), max(lengths)
    size = max(1, math.ceil((high - low + 1) / 30))
    counts = Counter((n - low) // size for n in lengths)
    fig = go.Figure(go.Histogram(x=lengths, xbins={"start": low - 0.5, "end": high + 0.5, "size": size},
                                 marker_color="#1f77b4", hovertemplate="%{x} tokens: %{y} sentences<extra></extra>"))
    _bar_layout(fig, f"{report['sentences']} sentences, {report['tokens']} tokens", "sentences", height)
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
    m = report["machine"]
    return _bar_layout(fig, f"Latency of the whole batch (median, bars = IQR; {m['device']}, {m['threads']} "
                            "thread(s))", "ms", height)


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
    return _bar_layout(fig, "Wasted work (FLOPs from torch.utils.flop_counter; below 0: less than the loop)", "%",
                       height)
