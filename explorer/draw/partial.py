"""The graph a forward built before it raised, drawn: the Playground's and the debugging lab's."""

from __future__ import annotations

import html

from explorer.core.paths import sanitize
from explorer.draw.graph import draw_graph
from explorer.draw.style import Unchecked
from explorer.eager.partial import PartialGraph


def partial_figure(partial: PartialGraph, arch: str, tokens: int) -> Unchecked:
    """The graph a forward built before it raised, the last node made before the failure ringed."""
    title = (f"Autograd graph up to the failure: {len(partial.graph.nodes)} nodes ({{drawn}}); {arch}, {tokens} "
             f"tokens<br><sup>{html.escape(sanitize(partial.said())[:160])}</sup>")
    lit = ("the last node made before it raised", frozenset({partial.last}) if partial.last >= 0 else frozenset())
    return draw_graph(partial.graph, title, lit=lit)
