"""Layered (Sugiyama) layout of an autograd graph, collapsing repeated structure when it is big.

Plotly redraws slowly past a few hundred drawn nodes, so a graph over `max_nodes` is drawn as
groups: first one node per module call (one per time step of an unrolled cell), then runs of
consecutive calls. The counts in the report always describe the full graph.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

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
    edges: list[tuple[int, int]]  # indices into nodes, forward direction
    total_nodes: int
    grouping: str  # "none", "per call", or "per N calls"

    @property
    def collapsed(self) -> bool:
        return self.grouping != "none"


def _group_key(n: GraphNode, level: int, chunk: int) -> tuple:
    if level == 0:
        return ("node", n.id)
    if n.is_param:
        return ("params", n.module)
    return ("call", n.module, n.call // chunk)


def _groups(graph: AutogradGraph, max_nodes: int) -> tuple[dict[int, tuple], str]:
    if len(graph.nodes) <= max_nodes:
        return {n.id: _group_key(n, 0, 1) for n in graph.nodes}, "none"
    chunk = 1
    while True:
        keys = {n.id: _group_key(n, 1, chunk) for n in graph.nodes}
        count = len(set(keys.values()))
        if count <= max_nodes:
            return keys, "per call" if chunk == 1 else f"per {chunk} calls"
        max_calls = max(n.call for n in graph.nodes) + 1
        if chunk >= max_calls:  # cannot collapse further: draw what we have
            return keys, f"per {chunk} calls"
        chunk = min(max_calls, max(chunk * 2, math.ceil(chunk * count / max_nodes)))


def layout_graph(graph: AutogradGraph, added: frozenset[int] = frozenset(),
                 max_nodes: int = MAX_DRAWN_NODES) -> GraphLayout:
    keys, grouping = _groups(graph, max_nodes)
    index: dict[tuple, int] = {}
    nodes: list[DrawNode] = []
    for n in graph.nodes:
        k = keys[n.id]
        i = index.get(k)
        if i is None:
            i = index[k] = len(nodes)
            nodes.append(DrawNode(label="", module=n.module))
        nodes[i].members.append(n)
        nodes[i].added += n.id in added
    for d in nodes:
        d.label = _label(d, grouping)
    edges = sorted({(index[keys[a]], index[keys[b]]) for a, b in graph.edges} - {(i, i) for i in range(len(nodes))})

    g = igraph.Graph(n=len(nodes), edges=_layout_edges(len(nodes), edges), directed=True)
    coords = g.layout_sugiyama(maxiter=20).coords
    for d, (pos, layer) in zip(nodes, coords, strict=False):
        d.x, d.y = layer, -pos  # forward runs left to right
    return GraphLayout(nodes, edges, len(graph.nodes), grouping)


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
    span = f"call {calls[0]}" if len(calls) == 1 else f"calls {calls[0]}-{calls[-1]}"
    top = Counter(m.op for m in d.members).most_common(1)[0][0]
    return f"{d.module} {span}: {len(d.members)} ops (mostly {top})"


def module_color_keys(nodes: list[DrawNode]) -> dict[str, list[int]]:
    """Node indices per colour group: the module path cut to its first two parts."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(nodes):
        groups[".".join(d.module.split(".")[:2])].append(i)
    return groups
