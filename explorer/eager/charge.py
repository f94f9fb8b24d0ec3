"""A profiled train step's operators charged to the nodes of its autograd graph (explorer/eager/costs.py runs the
pass and reads its figures from these).

Each operator's self time goes to the node of the nearest enclosing operator (itself included) whose autograd
sequence number is a node of the step's graph, as forward or backward by whether a backward function encloses it; each
of the step's top-level operators also takes the gap before it (the Python that issued it). A parameter's node
(AccumulateGrad) has no number: the k-th accumulation goes to the k-th parameter in the order the engine ran them.
An inference forward has no graph at all: its top-level operators are matched in order to the train step's
forward's and take their shares."""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any

import torch

from explorer.eager.graph import ACCUMULATE
from explorer.eager.lines import LINE_MARK

_BACKWARD = "autograd::engine::evaluate_function: "
_ACCUMULATE = _BACKWARD + "torch::autograd::AccumulateGrad"  # a parameter's node: its gradient's accumulation
# the pass's own marks in the profile: a step, the walk of its graph (left out), its zero_grad (not a node's), an
# inference forward
STEP, WALK, ZERO = "graph-explorer: step", "graph-explorer: walk", "graph-explorer: zero_grad"
INFER = "graph-explorer: inference forward"


@dataclass
class Charged:
    """One profiled step charged to its nodes, before the profiler's cost is taken off."""

    us: dict[int, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))  # [fwd, bwd] µs
    other_us: float = 0.0  # operators of no node, with the gaps before them
    other_forward_us: float = 0.0  # of which in the forward (not under a backward function)
    zero_grad_us: float = 0.0  # (in the parameters' nodes too when `params`)
    params: bool = False  # the parameters' accumulations, and zero_grad, charged to the parameters' nodes
    outside_us: float = 0.0  # after the last operator
    wall_us: float = 0.0  # the step less the pass's walk of its graph
    forward_ops: list[tuple[str, dict[int, float]]] = field(default_factory=list)  # its forward's top-level
    # operators in order: each one's key (`_key`) and the shares of its time each node took (none: no node's)
    forward_other: list[float] = field(default_factory=list)  # each one's µs of no node (and the gap before it, if
    # it is no node's)


def _owner(e: Any, node_of: dict[int, int]) -> tuple[int | None, int]:
    """(the node an operator's self time is charged to, or None; 1 if it ran in a backward function, else 0)."""
    node, up = None, e
    while up is not None and up.name != STEP:
        if node is None and up.sequence_nr in node_of:
            node = node_of[up.sequence_nr]
        if up.name.startswith(_BACKWARD):
            return node, 1  # a backward function's number is its node's: nothing above it is this operator's
        up = up.cpu_parent
    return node, 0


def _below(e: Any) -> list[Any]:
    """The events under `e`, each before its children, in the order they started."""
    out, stack = [], sorted(e.cpu_children, key=lambda c: -c.time_range.start)
    while stack:
        c = stack.pop()
        out.append(c)
        stack += sorted(c.cpu_children, key=lambda x: -x.time_range.start)
    return out


def charge(mark: Any, node_of: dict[int, int], accumulated: list[int]) -> Charged:
    """Each operator under `mark` (a step) charged its self time to its node, and each of the step's top-level
    operators the gap before it (a composite operator that charged nothing itself: to its first operator's node);
    the pass's walk of the graph left out, its time too; the zero_grad, and what ran after the last operator, apart.
    A parameter's accumulation has no number of its own: the k-th goes to `accumulated[k]` (the parameters' nodes in
    the order the engine ran them) if the step ran as many, and then the zero_grad too (it resets each one's
    gradient), in equal shares; the gradient's seed (after the walk, before the first backward function) goes to the
    loss's node (0), whose backward it starts."""
    step = Charged()
    owner: dict[int, tuple[int | None, int]] = {}
    other_under: dict[int, float] = defaultdict(float)  # a top-level operator -> the self µs of no node under it
    marks = [c for c in mark.cpu_children if c.name in (WALK, ZERO)]
    tops = sorted((c for c in mark.cpu_children if c.name not in (WALK, ZERO)), key=lambda c: c.time_range.start)
    runs = [c.id for c in tops if c.name == _ACCUMULATE]
    param_of = dict(zip(runs, accumulated, strict=True)) if len(runs) == len(accumulated) else {}
    walk_end = next((w.time_range.end for w in marks if w.name == WALK), mark.time_range.end)
    seed = {c.id for c in takewhile(lambda c: not c.name.startswith(_BACKWARD), (
        c for c in tops if c.time_range.start >= walk_end))}
    for top in tops:
        for e in [top, *_below(top)]:
            node, back = owner[e.id] = (param_of[top.id], 1) if top.id in param_of else (
                (0, 1) if top.id in seed else _owner(e, node_of))
            if node is None:
                step.other_us += e.self_cpu_time_total
                step.other_forward_us += 0.0 if back else e.self_cpu_time_total
                other_under[top.id] += e.self_cpu_time_total
            else:
                step.us[node][back] += e.self_cpu_time_total
    last, walked, walked_yet = mark.time_range.start, 0.0, False
    for e in sorted(mark.cpu_children, key=lambda c: c.time_range.start):
        if e.name == WALK:  # the Python on either side of it goes to the operator after it
            walked += e.time_range.elapsed_us()
            walked_yet = True  # the forward ends where the walk of its graph starts
            continue
        gap, walked = max(0.0, e.time_range.start - last - walked), 0.0
        last = max(last, e.time_range.end)
        if e.name == ZERO:
            step.zero_grad_us += e.time_range.elapsed_us() + gap
            continue
        node, back = owner[e.id]
        if node is None:
            node, back = next((owner[c.id] for c in _below(e) if owner[c.id][0] is not None), (None, 0))
        if not walked_yet and not back:
            step.forward_ops.append((_key(e), _shares(e, owner)))
            step.forward_other.append(other_under[e.id] + (gap if node is None else 0.0))
        if node is None:
            step.other_us += gap
            step.other_forward_us += 0.0 if back else gap
        else:
            step.us[node][back] += gap
    step.params = bool(param_of)
    for nid in param_of.values():  # zero_grad resets each parameter's gradient: an equal share each
        step.us[nid][1] += step.zero_grad_us / len(param_of)
    step.outside_us = mark.time_range.end - last - walked
    step.wall_us = mark.time_range.elapsed_us() - sum(w.time_range.elapsed_us() for w in marks if w.name == WALK)
    return step


def _key(e: Any) -> str:
    """What an operator is matched by: its name and its inputs' shapes (two linear layers of different widths are
    told apart)."""
    return f"{e.name}{e.input_shapes}"


def _shares(top: Any, owner: dict[int, tuple[int | None, int]]) -> dict[int, float]:
    """The shares of a top-level forward operator's self times (its own and its operators') each node took; equal
    shares if they took no measurable time; none if no node's."""
    us: dict[int, float] = defaultdict(float)
    for e in [top, *_below(top)]:
        node, back = owner[e.id]
        if node is not None and not back:
            us[node] += e.self_cpu_time_total
    total = sum(us.values())
    return {n: (t / total if total else 1 / len(us)) for n, t in us.items()}


def first_forward(mark: Any, node_of: dict[int, int]) -> list[tuple[str, dict[int, float], str | None]]:
    """The forward's top-level operators of a step profiled inside `line_marks`, in order: each one's key, the shares
    of its time each node took, and the model's line that ran it (None: not the model's, the loss's)."""
    def under(e: Any, line: str | None) -> Iterator[tuple[Any, str | None]]:
        for c in sorted(e.cpu_children, key=lambda c: c.time_range.start):
            if c.name.startswith(LINE_MARK):
                yield from under(c, c.name.removeprefix(LINE_MARK))
            else:
                yield c, line

    out = []
    for top, line in under(mark, None):
        if top.name == WALK:  # the forward ends where the walk of its graph starts
            break
        if top.name != ZERO:
            owner = {e.id: _owner(e, node_of) for e in [top, *_below(top)]}
            out.append((_key(top), _shares(top, owner), line))
    return out


def charge_inference(mark: Any, train: list[tuple[str, dict[int, float]]]) -> tuple[Charged, tuple[int, int]]:
    """An inference forward (`mark`) charged to nodes: its top-level operators matched in order to the train step's
    forward's (`train`), each one's time and the gap before it shared as its counterpart's was; with how many of its
    top-level operators were matched, of all."""
    step = Charged()
    tops = sorted(mark.cpu_children, key=lambda c: c.time_range.start)
    matcher = difflib.SequenceMatcher(None, [key for key, _ in train], [_key(e) for e in tops], autojunk=False)
    shares: dict[int, dict[int, float]] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            shares[block.b + k] = train[block.a + k][1]
    last = mark.time_range.start
    for i, e in enumerate(tops):
        us = max(0.0, e.time_range.start - last) + e.cpu_time_total
        last = max(last, e.time_range.end)
        for node, share in shares.get(i, {}).items():
            step.us[node][0] += us * share
        if not shares.get(i):
            step.other_us += us
    step.outside_us = mark.time_range.end - last
    step.wall_us = mark.time_range.elapsed_us()
    return step, (len(shares), len(tops))


def allocations(events: list[Any], node_of: dict[int, int]) -> dict[int, int]:
    """node -> the bytes its forward operators allocated."""
    out: dict[int, int] = defaultdict(int)
    for e in events:
        node, back = _owner(e, node_of)
        if node is not None and not back and e.self_cpu_memory_usage > 0:
            out[node] += e.self_cpu_memory_usage
    return dict(out)


def numbers(order: list[Any]) -> dict[int, int]:
    """A walked graph's autograd sequence numbers -> its node ids (the parameters' accumulators have none)."""
    return {fn._sequence_nr(): nid for nid, fn in enumerate(order) if fn.name() != ACCUMULATE}


def accumulators(order: list[Any], params: list[torch.Tensor]) -> list[int]:
    """The nodes of `params` (in the order their gradients were accumulated) in a walked graph; none unless each is
    one of its nodes."""
    node_of = {id(fn.variable): nid for nid, fn in enumerate(order) if fn.name() == ACCUMULATE}
    return [node_of[id(p)] for p in params] if all(id(p) in node_of for p in params) else []
