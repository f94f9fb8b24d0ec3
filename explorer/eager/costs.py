"""Where a train step's time and memory went, node by node of its autograd graph.

torch.profiler records every operator with its self time and the bytes it allocated, and each operator with the
autograd sequence number current when it ran: a forward operator carries the number of the node it creates (the
number about to be given out), a backward function (`autograd::engine::evaluate_function: XBackward0`) the number of
the node it runs. So each operator's self time is charged to the node of the nearest enclosing operator (itself
included) whose number is a node of this run's graph, as forward or backward by whether a backward function encloses
it. The run's graph is walked as the Playground's is (`graph.walk`), so node N here is node N on screen; the
operations are checked node by node.

A pass of its own, after the timings, `repeats` times (each node's median is shown, with the repeats' spread of the
sums): the profiler's own overhead is in these runs, never in the figures on the cards. What the operators do not
cover (Python between them, the profiler's bookkeeping) is the step's wall time minus the operators' sum, said as
such."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from explorer.core.errors import InputError
from explorer.eager.capture import TRAIN_SEED, train_loss, training
from explorer.eager.graph import ACCUMULATE, walk

_BACKWARD = "autograd::engine::evaluate_function: "
REPEATS = 5
PROFILED_SLOWER = 2.0  # a step under the profiler over the card's: 1.0-1.9x in bench/RESULTS-costs.md


@dataclass(frozen=True)
class NodeCost:
    forward_us: float  # the median over the repeats of the self time of the forward operators charged to it
    backward_us: float  # the same, of its backward function
    bytes: int  # what its forward operators allocated (the first repeat's: allocation is the same each time)

    @property
    def total_us(self) -> float:
        return self.forward_us + self.backward_us


@dataclass(frozen=True)
class Costs:
    nodes: dict[int, NodeCost]  # graph node -> its cost
    forward_ops_ms: tuple[float, ...]  # per repeat: the operators' self time charged to a node, forward
    backward_ops_ms: tuple[float, ...]  # the same, backward
    other_ops_ms: tuple[float, ...]  # operators charged to no node of the graph (the loss's gradient seed, ...)
    step_ms: tuple[float, ...]  # per repeat: the profiled train step's wall time (the profiler's overhead in it)
    matches_graph: bool  # this pass drew the graph on screen, operation for operation
    measured_at: float = 0.0  # time.time() when the pass ran

    @property
    def repeats(self) -> int:
        return len(self.step_ms)

    def ops_ms(self) -> float:
        """The median over the repeats of every operator's self time."""
        return statistics.median(f + b + o for f, b, o in zip(self.forward_ops_ms, self.backward_ops_ms,
                                                               self.other_ops_ms, strict=True))


def _charged(events: list[Any], node_of: dict[int, int]) -> tuple[dict[int, list[float]], float, dict[int, int]]:
    """(node -> [forward µs, backward µs], µs charged to no node, node -> bytes its forward allocated)."""
    us: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    allocated: dict[int, int] = defaultdict(int)
    other = 0.0
    for e in events:
        node, backward, up = None, False, e
        while up is not None:
            if node is None and up.sequence_nr in node_of:
                node = node_of[up.sequence_nr]
            if up.name.startswith(_BACKWARD):
                backward = True
                break  # a backward function's number is its node's: nothing above it is this operator's
            up = up.cpu_parent
        if node is None:
            other += e.self_cpu_time_total
            continue
        us[node][1 if backward else 0] += e.self_cpu_time_total
        if not backward and e.self_cpu_memory_usage > 0:
            allocated[node] += e.self_cpu_memory_usage
    return us, other, allocated


def repeats_within(step_s: float, budget_s: float, limit: str) -> int:
    """How many profiled repeats of a train step that took `step_s` unprofiled fit in `budget_s` (one more runs
    first, unprofiled), at most REPEATS; InputError naming `limit` if none does."""
    slower = step_s * PROFILED_SLOWER
    repeats = min(REPEATS, int(budget_s / slower) - 1) if slower > 0 else REPEATS
    if repeats < 1:
        raise InputError(f"Profiling this input's train step would take about {2 * slower:.0f} s (one step and a "
                         f"first one, with the profiler), over {limit} = {budget_s:g} s: try a shorter input or a "
                         "smaller architecture.")
    return repeats


def profile_costs(model: nn.Module, ids: torch.Tensor, ops: list[str] | None = None,
                  repeats: int = REPEATS) -> Costs:
    """The train step of `model` on `ids` profiled `repeats` times, each operator charged to its node; `ops`: the
    graph on screen's operations by node, to check that this pass drew the same graph."""
    per_node: dict[int, list[tuple[float, float]]] = defaultdict(list)
    forward, backward, other, wall = [], [], [], []
    allocated: dict[int, int] = {}
    matches = True
    with training(model, TRAIN_SEED):
        model.zero_grad(set_to_none=True)
        train_loss(model(ids), model).backward()  # a first step: one-time costs out of the figures
        for i in range(repeats):
            model.zero_grad(set_to_none=True)
            # the bytes from the first repeat only: recording allocations slows every operator a little more
            with profile(activities=[ProfilerActivity.CPU], profile_memory=i == 0) as prof:
                start = time.perf_counter()
                loss = train_loss(model(ids), model)
                walked = time.perf_counter()
                order, _ = walk(loss.grad_fn)
                walked = time.perf_counter() - walked  # the pass's own bookkeeping: not the step's time
                loss.backward()
                took = time.perf_counter() - start - walked
            names = ["param" if fn.name() == ACCUMULATE else fn.name() for fn in order]
            matches = matches and (ops is None or ops == names)
            node_of = {fn._sequence_nr(): nid for nid, fn in enumerate(order) if fn.name() != ACCUMULATE}
            us, outside, bytes_of = _charged(list(prof.events()), node_of)
            for nid in node_of.values():
                per_node[nid].append(tuple(us.get(nid, (0.0, 0.0))))
            forward.append(sum(f for f, _ in us.values()) / 1e3)
            backward.append(sum(b for _, b in us.values()) / 1e3)
            other.append(outside / 1e3)
            wall.append(took * 1e3)
            if i == 0:
                allocated = dict(bytes_of)
    nodes = {nid: NodeCost(statistics.median(f for f, _ in xs), statistics.median(b for _, b in xs),
                           allocated.get(nid, 0)) for nid, xs in per_node.items()}
    return Costs(nodes, tuple(forward), tuple(backward), tuple(other), tuple(wall), matches, time.time())
