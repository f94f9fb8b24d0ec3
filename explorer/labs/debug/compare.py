"""A silent bug raises nothing: the only way to see it is to compare. Against the un-bugged model (same
weights) at several lengths, and as the Playground's graph diff of the same input."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

from explorer.compile.observe import message_line
from explorer.core.inputs import text_of_length, tokenize
from explorer.eager.capture import capture_run
from explorer.eager.diff import diff_graphs
from explorer.labs.debug.modes import bugged as with_bug
from explorer.sources.edited import model_of


@dataclass(frozen=True)
class Comparison:
    tokens: int
    text: str
    max_abs_diff: float | None  # bugged vs un-bugged logits (None: the bugged model raised)
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GraphChange:
    nodes_clean: int
    nodes_bugged: int
    added: int
    removed: int
    label: str


def compare(model_name: str, config: dict, bug: str, texts: list[str], source: str = "") -> list[Comparison]:
    clean, bugged = model_of(model_name, config, source), with_bug(model_name, config, bug, source)
    out = []
    for text in texts:
        ids = tokenize(text).ids
        with torch.no_grad():
            try:
                diff = float((bugged(ids) - clean(ids)).abs().max())
            except Exception as e:  # the bug raising is a finding, not a fault
                out.append(Comparison(ids.shape[1], text, None, f"{type(e).__name__}: {message_line(e)}"))
                continue
        out.append(Comparison(ids.shape[1], text, diff))
    return out


def graph_change(model_name: str, config: dict, bug: str, text: str, source: str = "") -> GraphChange | None:
    """The autograd graphs of the clean and the bugged model on the same input, diffed as the Playground does."""
    clean, bugged = model_of(model_name, config, source), with_bug(model_name, config, bug, source)
    ids = tokenize(text).ids
    a = capture_run(clean, ids)
    try:
        b = capture_run(bugged, ids)
    except Exception:  # the bugged model raised on this input: there is no graph to diff
        return None
    d = diff_graphs(a.graph, b.graph, f"the un-bugged model on the same {ids.shape[1]} tokens")
    return GraphChange(len(a.graph.nodes), len(b.graph.nodes), d.nodes_added, d.nodes_removed, d.text())


def comparison_texts(text: str, lengths: list[int]) -> list[str]:
    """The input at each length, and a non-ASCII variant (the wrong-branch bug's trigger)."""
    base = [text_of_length(text, n) for n in lengths]
    return [*base, text_of_length("naïve café: " + text, max(lengths))]
