"""A tree network's graph drawn as its parse tree: one drawn node per leaf and per composition, the leaves in the
order of the text along the bottom with their words under them, each composition above its two children.

The generic layered layout puts a recursive cell's calls in layers by distance from the inputs, which scatters a
parse tree over the figure. Here the tree is read back from the graph itself: which call of the composing module
consumed which calls (its children), so the drawing is the structure autograd recorded, not the model's plan.
"""

from __future__ import annotations

from collections import defaultdict

from explorer.draw.layout import DrawNode, GraphLayout, group_nodes, shared_params
from explorer.eager.graph import AutogradGraph

GLUE = "model"  # ops of the model's own forward between module calls (picking a token, an activation)


def _top(module: str) -> str:
    return module.split(".")[0]


def _keys(graph: AutogradGraph, parts: tuple[str, str]) -> dict[int, tuple]:
    """A drawn-group key for every node: (part, call) for the leaf and composing modules and their submodules,
    parameters per module, the glue joined to the call that feeds it (or else the call it feeds), the rest per
    module."""
    keys: dict[int, tuple] = {}
    for n in graph.nodes:
        if n.is_param:
            keys[n.id] = ("params", n.module)
        elif _top(n.module) in parts:
            keys[n.id] = (_top(n.module), n.call)
        elif n.module != GLUE:
            keys[n.id] = ("module", n.module)
    producers: dict[int, list[int]] = defaultdict(list)
    consumers: dict[int, list[int]] = defaultdict(list)
    for a, b in graph.edges:
        producers[b].append(a)
        consumers[a].append(b)
    glue = [n.id for n in sorted(graph.nodes, key=lambda n: n.seq) if n.id not in keys]  # creation order
    for order, links in ((glue, producers), (glue[::-1], consumers)):
        for i in order:
            if i in keys:
                continue
            calls = {keys[j] for j in links[i] if keys.get(j, ("",))[0] in parts}
            if len(calls) == 1:
                keys[i] = calls.pop()
    for i in glue:
        keys.setdefault(i, ("module", GLUE))
    return keys


def _words(data: bytes) -> list[tuple[int, int, str]]:
    """(first byte, last byte, word) for each run of non-space bytes."""
    out, start = [], None
    for i, b in enumerate([*data, 0x20]):
        if b != 0x20 and start is None:
            start = i
        elif b == 0x20 and start is not None:
            out.append((start, i - 1, data[start:i].decode("utf-8", "replace")))
            start = None
    return out


def tree_layout(graph: AutogradGraph, leaf: str, compose: str, data: bytes,
                added: frozenset[int] = frozenset()) -> GraphLayout | None:
    """The parse-tree drawing, or None when the graph is not one tree of `compose` calls over `leaf` calls (leaf
    call k reads byte k of `data`)."""
    keys = _keys(graph, (leaf, compose))
    nodes, index, edges = group_nodes(graph, keys, added, lambda _, k: k[0] if k[0] in (leaf, compose) else k[1])
    part = {i: k for k, i in index.items()}
    children: dict[int, list[int]] = defaultdict(list)
    for a, b in edges:
        if part[a][0] in (leaf, compose) and part[b][0] == compose:
            children[b].append(a)
    leaves = sorted((i for i in part if part[i][0] == leaf), key=lambda i: part[i][1])
    composed = sorted((i for i in part if part[i][0] == compose), key=lambda i: part[i][1])  # post-order walk:
    # every call's children were called before it
    if not leaves or len(leaves) > len(data) or any(len(children[i]) != 2 for i in composed):
        return None
    span: dict[int, tuple[int, int]] = {}
    height: dict[int, int] = {}
    for i in leaves:
        k = part[i][1]
        span[i], height[i] = (k, k), 0
        nodes[i].x, nodes[i].y = float(k), 0.0
    for i in composed:
        if any(c not in span for c in children[i]):
            return None  # a composition of something other than the tree's own nodes
        left, right = sorted(children[i], key=lambda c: span[c][0])
        span[i] = (span[left][0], span[right][1])
        height[i] = 1 + max(height[left], height[right])
        nodes[i].x, nodes[i].y = (nodes[left].x + nodes[right].x) / 2, float(height[i])
    roots = [i for i in composed or leaves if not any(a == i and b in span for a, b in edges)]
    if len(roots) != 1:
        return None
    top = height[roots[0]]
    _place_rest(nodes, edges, span, top, len(leaves))
    for i, d in enumerate(nodes):
        d.label = _label(d, part[i], span.get(i), data)
    shared, drawn = shared_params(nodes, edges)
    words = [((lo + hi) / 2, -0.9, w) for lo, hi, w in _words(data[:len(leaves)])]
    return GraphLayout(nodes, drawn, len(graph.nodes), "per call, as the parse tree", shared, "", direction="up",
                       words=words)


def _place_rest(nodes: list[DrawNode], edges: list[tuple[int, int]], span: dict[int, tuple[int, int]], top: int,
                width: int) -> None:
    """What is not the tree: groups fed by the tree go above its root, one level each (the head, the loss); the
    inputs (the embedding) below the leaves; parameters along the left edge."""
    level = {i: float(nodes[i].y) for i in span}
    above = [i for i in range(len(nodes)) if i not in span and not nodes[i].is_param]
    for _ in range(len(above)):  # longest path from the tree, in at most as many rounds as there are groups
        for a, b in edges:
            if b in above and a in level:
                level[b] = max(level.get(b, top), level[a] + 1)
    middle = (width - 1) / 2
    for i in above:
        nodes[i].x, nodes[i].y = middle, level.get(i, -2.0)  # not fed by the tree: an input, under the leaves
    fed: dict[int, list[float]] = defaultdict(list)
    for a, b in edges:
        fed[a].append(nodes[b].y)
    for i, d in enumerate(nodes):
        if d.is_param:  # along the left edge, at the height of what they feed
            d.x, d.y = -3.0 - width * 0.3, sum(fed[i]) / max(1, len(fed[i]))


def _label(d: DrawNode, key: tuple, span: tuple[int, int] | None, data: bytes) -> str:
    if d.is_param:
        return f"{key[1]} params ({len(d.members)})"
    if span is None:
        return f"{key[1]}: {len(d.members)} ops"
    text = data[span[0]:span[1] + 1].decode("utf-8", "replace")
    return f"{key[0]}, call {key[1]}, over {text!r}: {len(d.members)} ops"
