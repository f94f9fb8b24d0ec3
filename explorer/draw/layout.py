"""Layered (Sugiyama) layout of an autograd graph, collapsing repeated structure when it is big.

Plotly redraws slowly past a few hundred drawn nodes, so a graph over `max_nodes` is drawn as
groups: first one node per module call (one per time step of an unrolled cell), then runs of
consecutive calls. One module can be opened (`expand`): its nodes are drawn one by one while the rest stays
grouped. The counts in the report always describe the full graph.

A parameter that feeds many operations (a cell's weights, used at every time step) is drawn once, beside the
path, with the number of its uses instead of an edge to each (`shared`): a fan of identical edges says nothing.
"""

from __future__ import annotations

import functools
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

import igraph

from explorer.core.limits import MAX_DRAWN_NODES
from explorer.eager.graph import AutogradGraph, GraphNode


@dataclass
class DrawNode:
    label: str
    module: str
    x: float = 0.0
    y: float = 0.0
    members: list[GraphNode] = field(default_factory=list)
    added: int = 0  # members that the diff counts as added

    @property
    def is_param(self) -> bool:
        return all(m.is_param for m in self.members)

    @property
    def saved_bytes(self) -> int:
        return sum(m.saved_bytes for m in self.members)


@dataclass
class GraphLayout:
    nodes: list[DrawNode]
    edges: list[tuple[int, int]]  # indices into nodes, forward direction: the ones drawn
    total_nodes: int
    grouping: str  # "none", "per call", or "per N calls"
    shared: dict[int, int] = field(default_factory=dict)  # drawn node -> operations it feeds (edges not drawn)
    expanded: str = ""  # the module drawn node by node, if one was opened
    direction: str = "right"  # where forward goes: "right" (layered), "up" (a parse tree, leaves at the bottom)
    words: list[tuple[float, float, str]] = field(default_factory=list)  # (x, y, text) written under a tree's leaves

    @property
    def collapsed(self) -> bool:
        return self.grouping != "none"


SHARED_USES = 4  # a parameter node feeding at least this many drawn nodes is drawn once, without its fan of edges


def _group_key(n: GraphNode, level: int, chunk: int) -> tuple:
    if level == 0:
        return ("node", n.id)
    if n.is_param:
        return ("params", n.module)
    return ("call", n.module, n.call // chunk)


def _in(module: str, expand: str) -> bool:
    return bool(expand) and (module == expand or module.startswith(expand + "."))


def _groups(graph: AutogradGraph, max_nodes: int, expand: str = "") -> tuple[dict[int, tuple], str]:
    if len(graph.nodes) <= max_nodes:
        return {n.id: _group_key(n, 0, 1) for n in graph.nodes}, "none"
    chunk = 1
    while True:
        keys = {n.id: _group_key(n, 0 if _in(n.module, expand) else 1, chunk) for n in graph.nodes}
        count = len({k for k in keys.values() if k[0] != "node"})  # the opened module is drawn whole regardless
        if count <= max_nodes:
            return keys, "per call" if chunk == 1 else f"per {chunk} calls"
        max_calls = max(n.call for n in graph.nodes) + 1
        if chunk >= max_calls:  # cannot collapse further: draw what we have
            return keys, f"per {chunk} calls"
        chunk = min(max_calls, max(chunk * 2, math.ceil(chunk * count / max_nodes)))


def modules(graph: AutogradGraph) -> list[tuple[str, int]]:
    """(module, nodes it made) for every module in the graph, most nodes first: what can be opened."""
    return graph.module_counts().most_common()


def layout_graph(graph: AutogradGraph, added: frozenset[int] = frozenset(),
                 max_nodes: int = MAX_DRAWN_NODES, expand: str = "") -> GraphLayout:
    if expand and expand not in dict(modules(graph)):
        expand = ""  # a module of an earlier graph: draw this one as usual
    keys, grouping = _groups(graph, max_nodes, expand)
    nodes, _, edges = group_nodes(graph, keys, added, lambda n, _: n.module)
    for d in nodes:
        d.label = _label(d, grouping)

    coords = _sugiyama(len(nodes), tuple(edges))
    for d, (pos, layer) in zip(nodes, coords, strict=False):
        d.x, d.y = layer, -pos  # forward runs left to right
    shared, drawn = shared_params(nodes, edges)
    return GraphLayout(nodes, drawn, len(graph.nodes), grouping, shared, expand)


@functools.lru_cache(maxsize=256)
def _sugiyama(n: int, edges: tuple[tuple[int, int], ...]) -> tuple[tuple[float, ...], ...]:
    """Layered coordinates of `n` nodes: kept per shape of graph, since a run's graph is drawn again for every
    session that diffs against it (the red outline changes, the layout does not) and a class types the same few."""
    g = igraph.Graph(n=n, edges=_layout_edges(n, list(edges)), directed=True)
    return tuple(tuple(c) for c in g.layout_sugiyama(maxiter=20).coords)


def group_nodes(graph: AutogradGraph, keys: dict[int, tuple], added: frozenset[int],
                module_of: Callable[[GraphNode, tuple], str]) -> tuple[list[DrawNode], dict[tuple, int],
                                                                     list[tuple[int, int]]]:
    """One drawn node per key (in the order the graph first meets each), named by `module_of(first node, key)`;
    the index of each key; the edges between drawn nodes, forward, without self-loops."""
    index: dict[tuple, int] = {}
    nodes: list[DrawNode] = []
    for n in graph.nodes:
        k = keys[n.id]
        i = index.get(k)
        if i is None:
            i = index[k] = len(nodes)
            nodes.append(DrawNode(label="", module=module_of(n, k)))
        nodes[i].members.append(n)
        nodes[i].added += n.id in added
    edges = sorted({(index[keys[a]], index[keys[b]]) for a, b in graph.edges} - {(i, i) for i in range(len(nodes))})
    return nodes, index, edges


def shared_params(nodes: list[DrawNode], edges: list[tuple[int, int]]) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """Parameter nodes feeding at least SHARED_USES others (with their uses), and the edges still drawn."""
    uses = Counter(a for a, _ in edges)
    shared = {i: uses[i] for i, d in enumerate(nodes) if d.is_param and uses[i] >= SHARED_USES}
    return shared, [(a, b) for a, b in edges if a not in shared]


def _layout_edges(n: int, edges: list[tuple[int, int]], fan_out: int = 3) -> list[tuple[int, int]]:
    """The edges the layering follows. A node feeding many others (a parameter used at every time
    step, the embedding unbound into tokens) would drag hundreds of long edges through every layer,
    which makes Sugiyama's dummy-vertex crossing reduction quadratic; for those, only the edge to
    the earliest consumer positions the node. Every edge is still drawn."""
    consumers: dict[int, list[int]] = defaultdict(list)
    indeg = [0] * n
    for a, b in edges:
        consumers[a].append(b)
        indeg[b] += 1
    # Longest-path layer of every node (Kahn's order), to find each hub's earliest consumer.
    layer = [0] * n
    ready = [i for i in range(n) if indeg[i] == 0]
    while ready:
        a = ready.pop()
        for b in consumers[a]:
            layer[b] = max(layer[b], layer[a] + 1)
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    kept = []
    for a, bs in consumers.items():
        kept += [(a, b) for b in bs] if len(bs) <= fan_out else [(a, min(bs, key=lambda b: layer[b]))]
    return kept


def _label(d: DrawNode, grouping: str) -> str:
    first = d.members[0]
    if grouping == "none" or len(d.members) == 1:
        return first.param or first.op
    if d.is_param:
        return f"{d.module} params ({len(d.members)})"
    calls = sorted({m.call for m in d.members})
    span = f"step {calls[0]}" if len(calls) == 1 else f"steps {calls[0]}-{calls[-1]}"
    top = Counter(m.op for m in d.members).most_common(1)[0][0]
    return f"{d.module}, {span}: {len(d.members)} ops (mostly {top})"


def short_label(d: DrawNode, calls_of_module: int) -> str:
    """What a drawn group says on the figure itself: its module and, for a module called more than once, which
    step(s) ("cell, step 37", "cell, steps 8-15"); a single node says nothing (its hover does)."""
    if len(d.members) == 1 and not d.is_param:
        return ""
    if d.is_param:
        return f"{d.module or 'model'} params"
    calls = sorted({m.call for m in d.members})
    if calls_of_module <= 1:
        return d.module or "model"
    return f"{d.module}, step {calls[0]}" if len(calls) == 1 else f"{d.module}, steps {calls[0]}-{calls[-1]}"


def step_ticks(layout: GraphLayout, most: int = 10) -> tuple[str, list[float], list[str]]:
    """The axis of the repeated structure: the module called most often (an unrolled cell, a tree's composition)
    and where its calls sit along the forward direction, at most `most` ticks; ("", [], []) when nothing repeats."""
    calls: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for d in layout.nodes:
        if d.is_param:
            continue
        for m in d.members:
            calls[m.module][m.call].append(d.x)
    if not calls:
        return "", [], []
    module, per_call = max(calls.items(), key=lambda kv: len(kv[1]))
    order = sorted(per_call)
    xs = [sum(per_call[c]) / len(per_call[c]) for c in order]
    if len(set(xs)) < min(3, len(xs)) or xs[-1] <= xs[0] or any(b < a for a, b in pairwise(xs)):
        return "", [], []  # nothing repeats, or its calls are not in forward order (a tree's leaves, compositions)
    every = max(1, math.ceil(len(order) / most))
    picked = order[::every]
    return module, [sum(per_call[c]) / len(per_call[c]) for c in picked], [str(c) for c in picked]


def module_color_keys(nodes: list[DrawNode]) -> dict[str, list[int]]:
    """Node indices per colour group: the module path cut to its first two parts."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(nodes):
        groups[".".join(d.module.split(".")[:2])].append(i)
    return groups
