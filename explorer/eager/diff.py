"""What changed between two runs' graphs: nodes added and removed, per module.

Nodes are matched by (module, op) counts: an RNN run over 8 tokens instead of 5 has three more
copies of every op its cell makes, and those are reported as added in that cell's module.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from explorer.eager.graph import AutogradGraph


@dataclass(frozen=True)
class ModuleChange:
    module: str
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclass(frozen=True)
class GraphDiff:
    label: str  # what is compared, e.g. "input A (5 tokens) -> input B (8 tokens)"
    nodes_added: int
    nodes_removed: int
    modules: tuple[ModuleChange, ...]  # only the modules whose node count changed
    added_ids: frozenset[int]  # nodes of the newer graph that count as added

    def text(self) -> str:
        if not self.modules:
            return f"{self.label}: the same graph (no node added or removed)."
        lines = [f"{self.label}: +{self.nodes_added} / -{self.nodes_removed} nodes"]
        for m in self.modules:
            lines.append(f"  {m.module:<28} {m.before:>6} -> {m.after:<6} ({m.delta:+d})")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "nodes_added": self.nodes_added,
            "nodes_removed": self.nodes_removed,
            "modules": [{"module": m.module, "before": m.before, "after": m.after} for m in self.modules],
        }


def diff_graphs(before: AutogradGraph, after: AutogradGraph, label: str) -> GraphDiff:
    key = lambda n: (n.module, n.op)  # noqa: E731
    a = Counter(key(n) for n in before.nodes)
    b = Counter(key(n) for n in after.nodes)
    # The last copies of a (module, op) in creation order (autograd's sequence number) are the new ones: the
    # extra time steps. Parameter leaves have none; among them, the later module call counts as newer.
    surplus = {k: b[k] - a[k] for k in b if b[k] > a[k]}
    added: set[int] = set()
    for n in sorted(after.nodes, key=lambda n: (n.seq, n.call, n.id), reverse=True):
        k = key(n)
        if surplus.get(k, 0) > 0:
            surplus[k] -= 1
            added.add(n.id)
    per_module_a = Counter(n.module for n in before.nodes)
    per_module_b = Counter(n.module for n in after.nodes)
    changes = tuple(
        ModuleChange(m, per_module_a[m], per_module_b[m])
        for m in sorted(set(per_module_a) | set(per_module_b))
        if per_module_a[m] != per_module_b[m]
    )
    return GraphDiff(
        label=label,
        nodes_added=sum((b - a).values()),
        nodes_removed=sum((a - b).values()),
        modules=changes,
        added_ids=frozenset(added),
    )
