"""Any graph of GraphNodes (autograd, or a compiled FX graph) drawn with Plotly, from a layout."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping

from explorer.compile.observe import FxNode
from explorer.core.fmt import count, format_bytes
from explorer.core.limits import MAX_DRAWN_NODES
from explorer.draw.labels import Spot, placed
from explorer.draw.layout import DrawNode, GraphLayout, layout_graph, module_color_keys, short_label, step_ticks
from explorer.draw.style import PALETTE, Unchecked, wrapped
from explorer.eager.graph import AutogradGraph, GraphNode
from models.branch import Branch

_ADDED = "#d62728"
_LIT = "#f0a000"  # the nodes of the line picked in the lines-that-ran table


def _hover(d: DrawNode, line_of: Mapping[int, str]) -> str:
    first = d.members[0]
    if len(d.members) == 1:
        lines = [f"<b>{first.param or first.op}</b>", f"module: {first.module} (call {first.call})"]
        if first.id in line_of:
            lines.append(f"made at {line_of[first.id]}")
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
        made = Counter(line_of[m.id] for m in d.members if m.id in line_of)
        lines += [f"{n} made at {where}" for where, n in made.most_common(3)]
    lines.append(f"saved by these nodes: {format_bytes(d.saved_bytes)}")
    if d.added:
        lines.append(f"<b>added vs comparison: {d.added}</b>")
    return "<br>".join(lines)


MAX_GRAPH_LABELS = 8  # group labels drawn on a graph; more would cover each other
TITLE_CHARS = 80  # a title line within the narrowest place a graph is drawn (the compiled panel's FX graph, ~600 px;
# about 7.5 px a character at 14 px): plotly clips a longer one on both sides


def _legend_name(group: str, nodes: list[DrawNode]) -> str:
    """'cell: 42 steps, 1,008 nodes': what a colour is, and how much of the graph it made."""
    ops = [m for d in nodes for m in d.members if not m.is_param]
    steps = max(Counter(module for module, _ in {(m.module, m.call) for m in ops}).values(), default=0)
    said = f"{steps} steps, " if steps > 1 else ""
    return f"{group or '(model)'}: {said}{count(len(ops), 'node')}" if ops else f"{group or '(model)'}: parameters"


def _labels(lay: GraphLayout, ticked: str) -> tuple[list[str], set[int]]:
    """The text drawn beside nodes: each colour group's name once, at its last node (so that the blocks that ran,
    early exit's depth, can be read off the figure); for a collapsed graph, the first and last group of the module
    the axis counts (`ticked`), with their steps; shared parameters with their number of uses. Also the nodes whose
    label goes under them: the steps', so that a module's name at a neighbouring node (the head after the last step)
    does not land on them."""
    labels = [""] * len(lay.nodes)
    below: set[int] = set()
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
            below.add(i)
    for i, uses in lay.shared.items():  # collapsed, an edge goes to a group of calls: say what was counted
        fed = f"feeds {uses} drawn groups" if lay.collapsed else f"{uses} uses"
        labels[i] = f"{lay.nodes[i].label.split(' (')[0]} (shared: {fed})"
    return labels, below


def _drawn(lay: GraphLayout) -> str:
    drawn = f"{len(lay.nodes)} drawn" if not lay.collapsed else (
        f"collapsed {lay.grouping}: {len(lay.nodes)} groups drawn")
    return drawn + (f", {lay.expanded} opened" if lay.expanded else "")


def _marker_px(d: DrawNode) -> float:
    return min(22, 8 + 2 * len(d.members) ** 0.5)  # a group's marker grows with its members


PLOT_WIDTH_PX = 600  # the graph's plot at a projector's 1280 px, beside its legend: labels are kept apart at this


def _placed(lay: GraphLayout, ticked: str, plot_px: tuple[float, float]) -> list[tuple[str, str]]:
    """Each node's (label, text position): the steps' labels under their nodes, parameters' beside the path (or
    above a tree's column), others above; the steps', then the shared parameters', then the modules' placed
    first, each moved to a free side where it would cover one placed before it (`labels.placed`)."""
    labels, below = _labels(lay, ticked)
    param_side = "middle right" if lay.direction == "right" else "top right"
    spots = [Spot(d.x, d.y, _marker_px(d) / 2, labels[i],
                  param_side if d.is_param else "bottom center" if i in below else "top center")
             for i, d in enumerate(lay.nodes)]
    order = sorted(range(len(spots)), key=lambda i: (i not in below, i not in lay.shared))
    out = placed([spots[i] for i in order], plot_px)
    return [pair for _, pair in sorted(zip(order, out, strict=True))]


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
               "textfont": {"size": 12, "color": "#a00"}, "cliponaxis": False}]
    if ghosts:
        traces += [{"type": "scatter", **lines, "mode": "lines", "line": {"dash": "dash", "color": "#999", "width": 1},
                    "hoverinfo": "skip", "showlegend": False},
                   {"type": "scatter", "x": [x for x, _, _ in ghosts], "y": [y for _, y, _ in ghosts],
                    "mode": "markers+text", "name": "not run (the exit skipped it)",
                    "marker": {"symbol": "circle-open", "size": 14, "color": "#999"},
                    "text": [f"{m}: not run, the forward exited before it" for *_, m in ghosts], "hoverinfo": "text",
                    "texttemplate": [m for *_, m in ghosts],  # alternating sides: the names are wider than a step
                    "textposition": ["bottom center", "top center"] * len(ghosts),
                    "textfont": {"size": 12, "color": "#777"}, "cliponaxis": False}]
    return traces


def _heat_trace(lay: GraphLayout, heat: Mapping[int, float], line_of: Mapping[int, str],
                shown: list[tuple[str, str]], timed: str) -> dict:
    """Every drawn node coloured by its time (a group: its members' sum) on one scale, and sized by it."""
    us = [sum(heat.get(m.id, 0.0) for m in d.members) for d in lay.nodes]
    top = max(us, default=0.0) or 1.0
    return {"type": "scatter", "x": [d.x for d in lay.nodes], "y": [d.y for d in lay.nodes], "mode": "markers+text",
            "name": f"time per node: {timed}, µs", "showlegend": False,
            # plotly's YlOrRd runs from red at its low end: reversed, the costliest node is the reddest
            "marker": {"size": [6 + 22 * (t / top) ** 0.5 for t in us], "color": us, "colorscale": "YlOrRd",
                       "reversescale": True, "cmin": 0, "cmax": top, "showscale": True,
                       "line": {"width": 0.5, "color": "#333"},
                       "colorbar": {"title": {"text": "µs"}, "thickness": 12},
                       "symbol": ["square" if d.is_param else "circle" for d in lay.nodes]},
            "text": [f"{_hover(d, line_of)}<br><b>{t:,.1f} µs</b> ({timed})" for d, t in zip(lay.nodes, us,
                                                                                                     strict=True)],
            "hoverinfo": "text", "customdata": _picks(lay.nodes), "texttemplate": [t for t, _ in shown],
            "textposition": [p for _, p in shown],
            "textfont": {"size": 12, "color": "#333"}, "cliponaxis": False}


def _picks(nodes: list[DrawNode]) -> list[int]:
    """What a click on each drawn node sends (ui/theme.PAGE_JS): its first graph node's id, which names the drawn
    node on the server (views/figures.drawn_node) without the figure carrying every member of a group."""
    return [d.members[0].id for d in nodes]


def _lit_trace(lay: GraphLayout, name: str, lit: frozenset[int]) -> list[dict]:
    """A ring around each drawn node that holds a lit node (a group is ringed if any member is), named with how
    many of the lit nodes it holds."""
    ringed = [(d, sum(m.id in lit for m in d.members)) for d in lay.nodes]
    ringed = [(d, n) for d, n in ringed if n]
    if not ringed:
        return []
    return [{"type": "scatter", "x": [d.x for d, _ in ringed], "y": [d.y for d, _ in ringed], "mode": "markers",
             "name": f"{name}: {count(len(lit), 'node')}", "hoverinfo": "text",
             "text": [f"{name}: {n} of this {'group' if len(d.members) > 1 else 'node'}" for d, n in ringed],
             "marker": {"size": [_marker_px(d) + 10 for d, _ in ringed], "color": "rgba(0,0,0,0)",
                        "line": {"width": 3, "color": _LIT}}}]


def draw_graph(graph: AutogradGraph, title: str, added: frozenset[int] = frozenset(),
               max_nodes: int = MAX_DRAWN_NODES, height: int = 560, expand: str = "",
               lay: GraphLayout | None = None, branches: Iterable[Branch] = (),
               colour_by: str = "module", lit: tuple[str, frozenset[int]] = ("", frozenset()),
               line_of: Mapping[int, str] | None = None, heat: Mapping[int, float] | None = None,
               timed: str = "forward + backward") -> Unchecked:
    """Any graph of GraphNodes (autograd, or a compiled FX graph) drawn layered, forward from left to right (or as
    a given layout, a parse tree upwards), each module a colour named in the legend with its count, groups and
    modules labelled on the figure, shared parameters drawn once, and the repeated structure's steps on the axis.
    `colour_by` names what the colours are in the legend (an FX graph's are op kinds, not modules); `lit`: a name
    (a line of the model's source) and the nodes ringed for it; `line_of`: node -> the line that made it, for
    the hover; `heat`: node -> its time (µs), to colour and size the nodes by instead of by module (`timed`: what
    that time is of)."""
    line_of = line_of or {}
    lay = lay or layout_graph(graph, added, max_nodes, expand)
    ex, ey = [], []
    for a, b in lay.edges:
        na, nb = lay.nodes[a], lay.nodes[b]
        ex += [na.x, nb.x, None]
        ey += [na.y, nb.y, None]
    # Plain dicts, one Figure built at once and not validated (see style.Unchecked).
    traces = [{"type": "scatter", "x": ex, "y": ey, "mode": "lines", "line": {"width": 0.6, "color": "#aab"},
               "hoverinfo": "skip", "showlegend": False}]
    ticked, tickvals, ticktext = step_ticks(lay) if lay.direction == "right" else ("", [], [])
    title = "<br>".join(wrapped(line, TITLE_CHARS) for line in title.replace("{drawn}", _drawn(lay)).split("<br>"))
    top = 30 + 20 * (title.count("<br>") + 1)
    shown = _placed(lay, ticked, (PLOT_WIDTH_PX, height - top - 40))
    groups = sorted(module_color_keys(lay.nodes).items(),  # most nodes first
                    key=lambda kv: (-sum(len(lay.nodes[j].members) for j in kv[1]), kv[0]))
    if heat is not None:  # one trace coloured and sized by each drawn node's time, instead of one per module
        groups = []
        traces.append(_heat_trace(lay, heat, line_of, shown, timed))
    for i, (module, idx) in enumerate(groups):
        nodes = [lay.nodes[j] for j in idx]
        traces.append({
            "type": "scatter", "x": [d.x for d in nodes], "y": [d.y for d in nodes], "mode": "markers+text",
            "name": _legend_name(module, nodes),
            "marker": {
                "size": [_marker_px(d) for d in nodes],
                "color": PALETTE[i % len(PALETTE)],
                "symbol": ["square" if d.is_param else "circle" for d in nodes],
                "line": {"width": [3 if d.added else 0.5 for d in nodes],
                         "color": [_ADDED if d.added else "#333" for d in nodes]},
            },
            "text": [_hover(d, line_of) for d in nodes], "hoverinfo": "text", "customdata": _picks(nodes),
            "texttemplate": [shown[j][0] for j in idx],
            "textposition": [shown[j][1] for j in idx],
            "textfont": {"size": 12, "color": "#333"}, "cliponaxis": False,
        })
    traces += _branch_traces(lay, branches)
    traces += _lit_trace(lay, *lit)
    if lay.words:
        traces.append({"type": "scatter", "x": [x for x, _, _ in lay.words], "y": [y for _, y, _ in lay.words],
                       "mode": "text", "text": [w for _, _, w in lay.words], "hoverinfo": "skip",
                       "textfont": {"size": 12, "color": "#111"}, "cliponaxis": False, "name": "the words",
                       "showlegend": False})
    if lay.direction == "up":
        axis = "forward ↑  (the words at the bottom, each composition above the two it joins, the output on top)"
    elif tickvals:
        axis = f"forward →  ticks: {ticked}, step (call) number"
    else:
        axis = "forward →  (inputs and parameters on the left, output on the right)"
    return Unchecked(traces, {
        "title": {"text": title, "font": {"size": 14}},
        "height": height, "margin": {"l": 10, "r": 10, "t": top, "b": 40},
        "plot_bgcolor": "white",
        "legend": {"title": {"text": f"{colour_by} (most nodes first)"}, "itemsizing": "constant"},
        "hoverlabel": {"align": "left"},
        "xaxis": {"title": {"text": axis}, "showgrid": bool(tickvals), "gridcolor": "#f0f0f0", "zeroline": False,
                  "showticklabels": bool(tickvals), "tickvals": tickvals, "ticktext": ticktext},
        "yaxis": {"visible": False},
    })


def fx_graph(nodes: tuple[FxNode, ...]) -> AutogradGraph:
    """An FX graph in the shape the graph renderer draws (its op kind stands where a module would)."""
    index = {n.name: i for i, n in enumerate(nodes)}
    graph_nodes = [GraphNode(i, n.target, n.op, 0, None, None) for i, n in enumerate(nodes)]
    edges = [(index[a], index[n.name]) for n in nodes for a in n.inputs if a in index]
    return AutogradGraph(graph_nodes, edges, len(nodes) - 1)

