"""The autograd graph of one run, read from `grad_fn.next_functions` before backward.

Walked iteratively (a 500-token unroll is thousands of nodes deep), with the `_saved_*` attribute
names looked up once per node type: `dir()` on every node costs far more than the walk itself.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from explorer.eager.trace import ModuleTrace

LOSS = "(loss)"  # ops created after the model returned
ACCUMULATE = "torch::autograd::AccumulateGrad"  # a parameter's (a leaf's) node


@dataclass(slots=True)
class SavedTensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    is_param: bool
    storage: int = 0  # the storage's address: tensors saved by several nodes (views too) share one
    storage_bytes: int = 0


@dataclass(slots=True)
class GraphNode:
    id: int
    op: str  # the grad_fn's name, e.g. "AddmmBackward0", or "param" for a parameter leaf
    module: str  # dotted module path that created it ("model" = the model's own forward)
    call: int  # which call of that module (the time step of an unrolled cell)
    shape: tuple[int, ...] | None
    dtype: str | None
    saved: tuple[SavedTensor, ...] = ()
    param: str | None = None  # the parameter's name, for leaves
    seq: int = -1  # autograd's sequence number: creation order within the run (-1 for parameter leaves)

    @property
    def is_param(self) -> bool:
        return self.param is not None

    @property
    def saved_bytes(self) -> int:
        return sum(s.bytes for s in self.saved)


@dataclass
class AutogradGraph:
    nodes: list[GraphNode]
    edges: list[tuple[int, int]]  # (producer, consumer): forward direction
    root: int
    _by_id: dict[int, GraphNode] = field(default_factory=dict, repr=False)
    _depth: int | None = field(default=None, repr=False, compare=False)  # a graph is never changed once captured

    def __post_init__(self) -> None:
        self._by_id = {n.id: n for n in self.nodes}

    def node(self, node_id: int) -> GraphNode:
        return self._by_id[node_id]

    @property
    def param_leaves(self) -> list[GraphNode]:
        return [n for n in self.nodes if n.is_param]

    def op_counts(self) -> Counter[str]:
        return Counter(n.op for n in self.nodes if not n.is_param)

    def saved_activation_bytes(self) -> int:
        """Bytes of the storages backward will read: saved by a node the loss reaches, each storage once,
        parameters excluded (a branch the loss does not depend on saves nothing backward needs)."""
        storages = {s.storage: s.storage_bytes for n in self.nodes for s in n.saved if not s.is_param}
        return sum(storages.values())

    def module_counts(self) -> Counter[str]:
        return Counter(n.module for n in self.nodes if not n.is_param)

    def depth(self) -> int:
        """Operations on the longest path from an input to the loss: how many steps backward must take one
        after another (an unrolled loop makes it grow with the length, a tree with its height)."""
        if self._depth is None:
            self._depth = self._longest_path()
        return self._depth

    def _longest_path(self) -> int:
        ops = {n.id for n in self.nodes if not n.is_param}
        into: dict[int, list[int]] = {i: [] for i in ops}
        for src, dst in self.edges:
            if src in ops and dst in ops:
                into[dst].append(src)
        longest: dict[int, int] = {}
        for start in ops:  # iterative DFS: an 8,000-node chain is deeper than Python's recursion limit
            stack = [start]
            while stack:
                node = stack[-1]
                pending = [s for s in into[node] if s not in longest]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                longest[node] = 1 + max((longest[s] for s in into[node]), default=0)
        return max(longest.values(), default=0)

    def summary(self) -> dict[str, Any]:
        ops = [n for n in self.nodes if not n.is_param]
        return {
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "op_nodes": len(ops),
            "param_leaves": len(self.nodes) - len(ops),
            "saved_tensor_refs": sum(len(n.saved) for n in ops),
            "top_ops": dict(self.op_counts().most_common(8)),
        }


_saved_names: dict[type, tuple[tuple[str, str], ...]] = {}
_dtype_names: dict[torch.dtype, str] = {}


def _dtype(dtype: torch.dtype) -> str:
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = str(dtype).removeprefix("torch.")
    return name


def _saved_attrs(node: Any) -> tuple[tuple[str, str], ...]:
    """(attribute, display name) of each `_saved_*` field of this node type."""
    kind = type(node)
    names = _saved_names.get(kind)
    if names is None:
        names = tuple((a, a[len("_saved_"):]) for a in dir(node) if a.startswith("_saved_"))
        _saved_names[kind] = names
    return names


def _saved_tensor(name: str, t: torch.Tensor, param_ptrs: set[int]) -> SavedTensor:
    storage = t.untyped_storage()
    ptr = storage.data_ptr()
    return SavedTensor(name, tuple(t.shape), _dtype(t.dtype), t.nbytes, ptr in param_ptrs, ptr, storage.nbytes())


# Per node type, the `_saved_*` fields seen holding a size or a scalar: never a tensor, not read again (a capture
# reads thousands of nodes of a few types, and each read of a field builds its value anew)
_sizes: dict[type, set[str]] = {}


def _read_saved(node: Any, param_ptrs: set[int]) -> tuple[SavedTensor, ...]:
    out = []
    sizes = _sizes.setdefault(type(node), set())
    for attr, name in _saved_attrs(node):
        if attr in sizes:
            continue
        value = getattr(node, attr)
        if isinstance(value, torch.Tensor):
            out.append(_saved_tensor(name, value, param_ptrs))
        elif isinstance(value, (list, tuple)):
            # Lists of sizes are common; lists of tensors (e.g. cat's inputs) are counted one by one.
            tensors = [(i, t) for i, t in enumerate(value) if isinstance(t, torch.Tensor)]
            out.extend(_saved_tensor(f"{name}[{i}]", t, param_ptrs) for i, t in tensors)
            if value and not tensors:  # (an empty list says nothing: a list of tensors may be empty)
                sizes.add(attr)
        elif value is not None:  # a size or a scalar (None: an optional input not given, a tensor another time)
            sizes.add(attr)
    return tuple(out)


def walk(*roots: Any) -> tuple[list[Any], list[tuple[int, int]]]:
    """The nodes under `roots` (grad_fns; a run's graph has one, the loss's), numbered in the order found (the
    roots first), and the edges between them (producer, consumer): the numbering every view of a run's graph
    shares (explorer/eager/lines.py too)."""
    ids: dict[Any, int] = {}
    for root in roots:
        ids.setdefault(root, len(ids))
    order = list(ids)
    edges: list[tuple[int, int]] = []
    stack = list(reversed(order))
    while stack:
        fn = stack.pop()
        consumer = ids[fn]
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            nid = ids.get(nxt)
            if nid is None:
                nid = ids[nxt] = len(order)
                order.append(nxt)
                stack.append(nxt)
            edges.append((nid, consumer))
    return order, edges


def capture_graph(root: Any, trace: ModuleTrace, param_names: dict[int, str], *more: Any) -> AutogradGraph:
    """Walk the graph under `root` (a grad_fn), and under `more` roots if given (a forward that raised has no loss:
    its graph is what its operations' outputs reach). `param_names` maps id(parameter) to its name."""
    param_ptrs = {t.untyped_storage().data_ptr() for t in trace.parameters}
    order, edges = walk(root, *more)
    nodes = []
    for nid, fn in enumerate(order):
        name = fn.name()
        if name == ACCUMULATE:
            var = fn.variable
            pname = param_names.get(id(var), "input")
            module = pname.rpartition(".")[0] or "model"
            nodes.append(GraphNode(nid, "param", module, 0, tuple(var.shape), _dtype(var.dtype), param=pname))
            continue
        meta = fn._input_metadata
        shape = tuple(meta[0].shape) if meta else None
        dtype = _dtype(meta[0].dtype) if meta else None
        seq = fn._sequence_nr()
        module, call = trace.owner(seq)
        nodes.append(GraphNode(nid, name, module if module is not None else LOSS, call, shape, dtype,
                               _read_saved(fn, param_ptrs), seq=seq))
    return AutogradGraph(nodes, edges, 0)
