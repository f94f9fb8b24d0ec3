"""Where a train step's time and memory went, node by node of its autograd graph.

torch.profiler records every operator with its self time, the bytes it allocated and the autograd sequence number
current when it ran; explorer/eager/charge.py charges each one (and the Python that issued it) to a node of the
step's graph, walked as the Playground's is (`graph.walk`), so node N here is node N on screen. Every profiled time
is then scaled by the step's time without the profiler over its time with it, both measured in this pass: the
profiler slows every operator, and this takes its cost off in proportion. A parameter's node (autograd's
AccumulateGrad) has no number: the order in which the engine accumulates the parameters' gradients is read from
hooks in the first step, and each parameter's node also takes an equal share of `zero_grad`, which resets its
gradient; the gradient's seed goes to the loss's node. So the nodes, the operators of no node and what ran after
the last operator add up to the step as timed without the profiler.

A pass of its own, after the timings, on a measuring core as a timing is (held, so nothing else runs there, at the
timings' thread count): a first step profiled with its allocations and its operators' input shapes recorded (which
slows every operator more), for the bytes and the keys the inference forward is matched by; then `repeats` pairs of
steps in one profiler session, one with the profiler collecting and one with it switched off (the order
alternating, so that a slow spell of the machine falls on both; the plain one up to BACK_TO_BACK steps in a row after
an untimed one, their mean, as the card's timer runs them: one step alone right after a profiled one reads above the
card); each node's mean over the repeats is shown (a sum of medians would drop every node's spikes and fall short of
the step), with the repeats' spread of the sums.

The card's forward is an inference forward (`no_grad`), which records no graph: no sequence number ties its
operators to nodes. It is profiled in a session of its own, up to INFERENCE_REPEATS pairs of it timed the same way
(the plain one as the plain step is, in a row after an untimed one), and its top-level operators are
matched, in order and by name and input shapes, to the train step's forward's (a layer run in train mode only is
left unmatched): each matched operator's time, and the Python before it, goes to the nodes its counterpart's time
went to, in the same shares. So the nodes' inference times, the operators matched to no node (or
to none) and what ran after the last add up to the inference forward as timed without the profiler."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.benchmark.utils.common import set_torch_threads

from explorer.core.errors import InputError
from explorer.core.machine import THREADS, on_core
from explorer.eager import timing
from explorer.eager.capture import TRAIN_SEED, forward, train_loss, training
from explorer.eager.charge import (
    INFER,
    STEP,
    WALK,
    ZERO,
    Charged,
    accumulators,
    allocations,
    charge,
    charge_inference,
    first_forward,
    numbers,
)
from explorer.eager.graph import ACCUMULATE, walk
from explorer.eager.lines import line_marks

REPEATS = 5
PROFILED_SLOWER = 2.0  # a step under the profiler over one without, at most (each pass's summary gives its own: the
# inverse of "every profiled time xS")
# A plain run (a train step, an inference forward) is timed up to this many times back to back, after one untimed,
# as the card's timer runs it: one call alone, right after a profiled one, reads above the card's median (its caches
# cold), which the timer takes over calls in a row; fewer when one run is long (PLAIN_S: a cold cache costs it little)
BACK_TO_BACK = 5
PLAIN_S = 0.05
INFERENCE_REPEATS = 3  # pairs of inference forwards, at most: each profiled one is parsed from the profile with its
# operators' input shapes, the pass's costliest part
INFERENCE_SHARE = 0.5  # an inference forward's time over its train step's, at most (every model's cards in
# bench/RESULTS-costs.md stay under it)


@dataclass(frozen=True)
class NodeCost:
    forward_us: float  # mean over the repeats: its forward operators and the Python before them, the profiler off
    backward_us: float  # the same, of its backward function
    bytes: int  # what its forward operators allocated (the first repeat's: allocation is the same each time)
    inference_us: float  # mean over the repeats: its share of the inference forward (matched operators), profiler off

    @property
    def total_us(self) -> float:
        return self.forward_us + self.backward_us


@dataclass(frozen=True)
class Costs:
    nodes: dict[int, NodeCost]  # graph node -> its cost
    forward_ops_ms: tuple[float, ...]  # per repeat: the time charged to a node, forward
    backward_ops_ms: tuple[float, ...]  # the same, backward
    other_ops_ms: tuple[float, ...]  # charged to no node of the graph (an index, a layer the loss never reaches)
    other_forward_ops_ms: tuple[float, ...]  # of which in the forward (on tensors that need no gradient: an index, ...)
    zero_grad_ms: tuple[float, ...]  # per repeat: the step's zero_grad (the card's step has one too; in the
    # parameters' nodes' backward, an equal share each, when `params` has any)
    outside_ms: tuple[float, ...]  # per repeat: after the step's last operator
    step_ms: tuple[float, ...]  # per repeat: the profiled step's wall time (the profiler's cost in it)
    plain_ms: tuple[float, ...]  # the same step's wall time without the profiler, in this pass
    plain_forward_ms: tuple[float, ...]  # of which its forward and loss (recording the graph): what the nodes'
    # forward is set against (the card's forward is an inference forward, which records no graph)
    scale: float  # the plain steps' mean over the profiled ones': what every profiled time is multiplied by
    inference_ops_ms: tuple[float, ...]  # per repeat: the inference forward's time charged to a node
    other_inference_ms: tuple[float, ...]  # its operators matched to no node (and the Python before them)
    inference_outside_ms: tuple[float, ...]  # after its last operator
    inference_ms: tuple[float, ...]  # per repeat: the profiled inference forward's wall time
    plain_inference_ms: tuple[float, ...]  # the inference forward's wall time without the profiler, in this pass
    inference_scale: float  # as `scale`, for the inference forwards
    matched_ops: tuple[int, int]  # the inference forward's top-level operators matched to the train step's, of all
    # (the first repeat's; one matched to an operator of no node takes no node's share)
    params: frozenset[int]  # the parameters' nodes costed (their backward: their gradients' accumulation and reset)
    other_lines: dict[str, float]  # the model's line (file:line) -> the mean ms of the forward's operators of no node
    # it ran, with the Python before them (an index, a routing's argmax: the rest of other_forward_ops_ms is the loss's)
    matches_graph: bool  # this pass drew the graph on screen, operation for operation
    measured_at: float = 0.0  # time.time() when the pass ran

    @property
    def repeats(self) -> int:
        return len(self.step_ms)

    def nodes_ms(self) -> tuple[float, float]:
        """(forward, backward): the nodes' means summed."""
        return (sum(c.forward_us for c in self.nodes.values()) / 1e3,
                sum(c.backward_us for c in self.nodes.values()) / 1e3)

    def nodes_inference_ms(self) -> float:
        """The nodes' inference means summed."""
        return sum(c.inference_us for c in self.nodes.values()) / 1e3


def back_to_back(run_s: float) -> int:
    """How many plain runs to time in a row after an untimed one that took `run_s`: BACK_TO_BACK, fewer past PLAIN_S."""
    return min(BACK_TO_BACK, max(1, int(PLAIN_S / run_s))) if run_s > 0 else BACK_TO_BACK


def repeats_within(step_s: float, budget_s: float, limit: str) -> int:
    """How many repeats of a train step that took `step_s` unprofiled (each run once profiled and, after an untimed
    one, `back_to_back` times plain, and an inference forward the same way) fit in `budget_s` beside two first steps
    profiled (one recording allocations), at most REPEATS; InputError naming `limit` if none does."""
    infer_s = INFERENCE_SHARE * step_s  # at most; its plain runs in a row last at most PLAIN_S or BACK_TO_BACK of it
    each = (step_s * (1 + PROFILED_SLOWER + back_to_back(step_s)) + infer_s * (1 + PROFILED_SLOWER)
            + min(max(infer_s, PLAIN_S), BACK_TO_BACK * infer_s))  # (a bound: at most INFERENCE_REPEATS of the
    # inference pairs run)
    repeats = min(REPEATS, int(budget_s / each) - 2) if each > 0 else REPEATS
    if repeats < 1:
        raise InputError(f"Profiling this input's train step would take about {3 * each:.0f} s (with and without "
                         f"the profiler, and two first steps), over {limit} = {budget_s:g} s: try a shorter input or "
                         "a smaller architecture.")
    return repeats


def _train(model: nn.Module, ids: torch.Tensor, marked: bool = False) -> list[Any]:
    """One train step; its graph's nodes as walked (`marked`: the walk and the zero_grad in marks of their own, in
    a profile)."""
    with record_function(ZERO) if marked else contextlib.nullcontext():
        model.zero_grad(set_to_none=True)
    loss = train_loss(model(ids), model)
    with record_function(WALK) if marked else contextlib.nullcontext():
        order, _ = walk(loss.grad_fn)
    loss.backward()
    return order


def _pairs(repeats: int, prof: profile, profiled: Callable[[], None], plain: Callable[[], None]) -> None:
    """`repeats` pairs of runs, one profiled and one with the profiler collecting nothing (as the cards time), the
    order alternating, so that a slow spell of the machine falls on both."""
    cpu = [ProfilerActivity.CPU]
    for i in range(repeats):
        for collecting in (False, True) if i % 2 == 0 else (True, False):
            if collecting:
                profiled()
                continue
            prof.toggle_collection_dynamic(False, cpu)
            plain()
            prof.toggle_collection_dynamic(True, cpu)


def profile_costs(model: nn.Module, ids: torch.Tensor, ops: list[str] | None = None,
                  repeats: int = REPEATS) -> Costs:
    """The train step of `model` on `ids` profiled `repeats` times, each operator charged to its node, and its
    inference forward as many times, matched to the train step's; `ops`: the graph on screen's operations by node,
    to check that this pass drew the same graph."""
    cpu = [ProfilerActivity.CPU]
    plain: list[float] = []
    plain_forward: list[float] = []
    plain_inference: list[float] = []
    graphs: list[list[Any]] = []

    def step() -> None:
        with record_function(STEP):
            graphs.append(_train(model, ids, marked=True))

    def plain_step() -> None:
        start = time.perf_counter()
        _train(model, ids)  # the first after a profiled one reads high (its caches cold): not timed
        runs = back_to_back(time.perf_counter() - start)
        whole = forward_part = 0.0
        for _ in range(runs):
            start = time.perf_counter()
            model.zero_grad(set_to_none=True)
            forward_start = time.perf_counter()
            loss = train_loss(model(ids), model)
            backward = time.perf_counter()
            loss.backward()
            whole += time.perf_counter() - start
            forward_part += backward - forward_start
        plain.append(whole * 1e3 / runs)
        plain_forward.append(forward_part * 1e3 / runs)

    def inference() -> None:
        with record_function(INFER):
            forward(model, ids)

    def plain_inference_forward() -> None:
        start = time.perf_counter()
        forward(model, ids)  # (as plain_step: not timed)
        runs = back_to_back(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(runs):
            forward(model, ids)
        plain_inference.append((time.perf_counter() - start) * 1e3 / runs)

    with timing.measuring_core() as core, on_core(core), set_torch_threads(THREADS):
        # a first step (one-time costs out of the figures) profiled with its allocations and its operators' input
        # shapes recorded, each line of the model in a mark of its own, all of which slow it (never timed): for the
        # bytes, what the inference forward's operators are matched by, and the line that ran each operator; and
        # the order in which the engine accumulates the parameters' gradients (the same in every step of one graph)
        accumulated: list[torch.Tensor] = []
        hooks = [p.register_post_accumulate_grad_hook(accumulated.append) for p in model.parameters()
                 if p.requires_grad]
        try:
            with (training(model, TRAIN_SEED), profile(activities=cpu, profile_memory=True, record_shapes=True) as
                  first, record_function(STEP), line_marks(model)):
                order = _train(model, ids, marked=True)
        finally:
            for hook in hooks:
                hook.remove()
        with profile(activities=cpu) as prof, training(model, TRAIN_SEED):
            _train(model, ids)  # the profiler's own first step (outside every mark: not read)
            _pairs(repeats, prof, step, plain_step)
        with profile(activities=cpu, record_shapes=True) as inferring:
            forward(model, ids)  # in the model's own mode, as the card's forward runs (its first: not read)
            _pairs(min(repeats, INFERENCE_REPEATS), inferring, inference, plain_inference_forward)
    allocated = allocations(list(first.events()), numbers(order))
    firsts = first_forward(next(e for e in first.events() if e.name == STEP), numbers(order))
    shaped = [(key, shares) for key, shares, _ in firsts]
    marks = sorted((e for e in prof.events() if e.name == STEP), key=lambda e: e.time_range.start)
    params = [accumulators(order, accumulated) for order in graphs]  # each step's parameters' nodes

    def charged() -> list[Charged]:
        return [charge(mark, numbers(order), p) for mark, order, p in zip(marks, graphs, params, strict=True)]

    steps = charged()
    if any(params) and not all(s.params for s in steps):  # in every step or none: zero_grad in the nodes or apart
        params = [[] for _ in graphs]
        steps = charged()
    # each inference forward matched to a step's forward: its operators' shares, with the first step's keys (the
    # same operators in the same order, unless the model draws differently each run: then the first step's shares)
    inferred = [charge_inference(mark, list(zip((k for k, _ in shaped), (sh for _, sh in s.forward_ops), strict=True))
                                  if len(s.forward_ops) == len(shaped) else shaped) for mark, s in zip(
        sorted((e for e in inferring.events() if e.name == INFER), key=lambda e: e.time_range.start),
        steps[:INFERENCE_REPEATS], strict=True)]
    # the profiler's cost taken off in proportion: every profiled time scaled by the plain runs' mean over the
    # profiled ones' (means, as the nodes' figures are: a sum of means is the mean of the sums, where medians would
    # drop each node's spikes)
    scale = statistics.mean(plain) / statistics.mean(s.wall_us / 1e3 for s in steps)
    inference_scale = statistics.mean(plain_inference) / statistics.mean(s.wall_us / 1e3 for s, _ in inferred)
    per_node: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for s, order, p in zip(steps, graphs, params, strict=True):
        for nid in [*numbers(order).values(), *p]:
            f, b = s.us.get(nid, (0.0, 0.0))
            per_node[nid].append((f * scale, b * scale))
    matches = ops is None or all(ops == ["param" if fn.name() == ACCUMULATE else fn.name() for fn in order]
                                 for order in graphs)
    runs = [s for s, _ in inferred]
    nodes = {nid: NodeCost(statistics.mean(f for f, _ in xs), statistics.mean(b for _, b in xs),
                           allocated.get(nid, 0), statistics.mean(r.us[nid][0] if nid in r.us else 0.0 for r in runs)
                           * inference_scale) for nid, xs in per_node.items()}

    def ms(of: Callable[[Charged], float], runs: list[Charged] = steps, by: float = scale) -> tuple[float, ...]:
        return tuple(of(s) * by / 1e3 for s in runs)

    # the forward's operators of no node by the model's line that ran them, in the steps laid out as the first
    same = [s for s in steps if len(s.forward_other) == len(firsts)]
    by_line: dict[str, float] = defaultdict(float)
    for s in same:
        for (_, _, line), us in zip(firsts, s.forward_other, strict=True):
            if line is not None and us > 0:
                by_line[line] += us * scale / 1e3 / len(same)
    return Costs(nodes, ms(lambda s: sum(f for f, _ in s.us.values())), ms(lambda s: sum(b for _, b in s.us.values())),
                 ms(lambda s: s.other_us), ms(lambda s: s.other_forward_us), ms(lambda s: s.zero_grad_us),
                 ms(lambda s: s.outside_us), tuple(s.wall_us / 1e3 for s in steps), tuple(plain),
                 tuple(plain_forward), scale,
                 ms(lambda s: sum(f for f, _ in s.us.values()), runs, inference_scale),
                 ms(lambda s: s.other_us, runs, inference_scale), ms(lambda s: s.outside_us, runs, inference_scale),
                 tuple(s.wall_us / 1e3 for s in runs), tuple(plain_inference), inference_scale,
                 inferred[0][1], frozenset(n for p in params for n in p), dict(by_line),
                 matches, time.time())
