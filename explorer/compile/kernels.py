"""Where the compiled forward's time went: inductor's kernels, each traced back to the FX nodes dynamo captured.

The forward is compiled afresh (a fresh dynamo, inductor's caches off: a graph served from the cache is not
generated again, and only generation records provenance) with two of inductor's own switches on:
`trace.provenance_tracking_level`, which records which post-grad nodes each kernel computes and which of dynamo's
(pre-grad) FX nodes each post-grad node came from, published as the structured trace's
`inductor_provenance_tracking_node_mappings` artifact (what tlparse reads); and `cpp.enable_kernel_profile`, which
makes every generated C++ kernel a profiler event of its own. Then the compiled forward runs `repeats` times under
torch.profiler: a generated kernel is found by its name; a call into an ATen kernel inductor did not generate
(`extern_kernels.addmm`) by its place among that operator's calls in the graph's call, in the order the generated
code makes them. A kernel's time is shared evenly among the FX nodes it computes (a fused kernel computes many);
what the kernels do not cover (guards, the wrapper's Python, allocation) is the compiled region's time minus the
kernels', said as such."""

from __future__ import annotations

import bisect
import json
import logging
import re
import statistics
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch._inductor import config as inductor_config
from torch._inductor.compile_fx import compile_fx
from torch.profiler import ProfilerActivity, profile, record_function

from explorer.compile.observe import FxNode, fx_nodes
from explorer.core.errors import InputError
from explorer.eager.compare import iqr
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Job, WorkerContext

REPEATS = 20
_MAPPINGS = "inductor_provenance_tracking_node_mappings"
_TRACE_LOGGER = "torch.__trace"  # torch's structured trace (TORCH_TRACE, tlparse) logs its records here
_REGION = re.compile(r"^Torch-Compiled Region: \d+/\d+$")
_GENERATED = re.compile(r"^graph_\d+_(\w+)$")  # cpp.enable_kernel_profile's event: graph_<n>_<kernel>
_REPEAT = "graph explorer: one profiled forward"
_CALL = re.compile(r"^(.+):(\d+)$")  # the mapping's kernel: "<name>:<its place in the generated code>"


@dataclass(frozen=True)
class Sampled:
    samples: tuple[float, ...]  # one time per profiled forward (µs)

    @property
    def us(self) -> float:
        """The median per forward (µs)."""
        return statistics.median(self.samples)

    @property
    def iqr_us(self) -> float:
        return iqr(self.samples)


@dataclass(frozen=True)
class Kernel(Sampled):
    name: str  # "cpp_fused_gelu_native_layer_norm_0", or an ATen kernel's "extern_kernels.addmm"
    graph: int  # which of the captured graphs (0: the first)
    fx_nodes: tuple[str, ...]  # the FX nodes of that graph it computes
    generated: bool  # inductor wrote it (C++), or called an ATen kernel


@dataclass(frozen=True)
class KernelCosts:
    graphs: tuple[tuple[FxNode, ...], ...]  # each FX graph dynamo captured, in order
    kernels: tuple[Kernel, ...]  # most time first
    region: Sampled  # the compiled regions' time in each forward: the kernels, guards and wrappers
    unmatched: tuple[str, ...] = ()  # kernels the mapping names whose calls the profiler did not show

    @property
    def repeats(self) -> int:
        return len(self.region.samples)

    def node_us(self, graph: int) -> dict[str, float]:
        """Each FX node of `graph` -> its share of its kernels' time (µs)."""
        shares: dict[str, float] = defaultdict(float)
        for k in self.kernels:
            if k.graph == graph and k.fx_nodes:
                for n in k.fx_nodes:
                    shares[n] += k.us / len(k.fx_nodes)
        return dict(shares)

    @property
    def kernels_us(self) -> float:
        """The kernels' medians, summed (what the nodes' shares add up to)."""
        return sum(k.us for k in self.kernels)



@dataclass(frozen=True)
class KernelsJob(Job[KernelCosts]):
    """`kernel_costs` in a worker of its own (it resets dynamo: a session's compile worker keeps its graphs)."""

    model: str
    config: dict
    ids: list[int]
    repeats: int = REPEATS

    def run(self, ctx: WorkerContext) -> KernelCosts:
        ctx.phase("compiling afresh with inductor's provenance on, then profiling the kernels")
        model = build_model(self.model, make_config(self.model, self.config))
        return kernel_costs(model, torch.tensor([self.ids], dtype=torch.long), self.repeats)


class _Mappings(logging.Handler):
    """The provenance artifacts of the structured trace, each with its compile id ("0/0"), in compile order."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.found: list[tuple[str, dict[str, Any]]] = []

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", {})
        if metadata.get("artifact", {}).get("name") == _MAPPINGS:
            cid = f"{metadata.get('frame_id')}/{metadata.get('frame_compile_id')}"
            self.found.append((cid, json.loads(record.payload)))


@contextmanager
def _provenance() -> Iterator[_Mappings]:
    log = logging.getLogger(_TRACE_LOGGER)
    handler, level, propagate = _Mappings(), log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False  # the trace's records are for this handler, not the app's log
    try:
        with inductor_config.patch({"trace.provenance_tracking_level": 1, "cpp.enable_kernel_profile": True,
                                    "fx_graph_cache": False}), \
                torch._functorch.config.patch(enable_autograd_cache=False):
            yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate


def _kernels_to_fx(mapping: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """kernel ("name:place") -> the pre-grad FX nodes it computes, through the post-grad nodes."""
    post_to_pre = mapping.get("postToPre", {})
    return {kernel: tuple(dict.fromkeys(pre for p in posts for pre in post_to_pre.get(p, ())))
            for kernel, posts in mapping.get("cppCodeToPost", {}).items()}


def kernel_costs(model: nn.Module, ids: torch.Tensor, repeats: int = REPEATS) -> KernelCosts:
    """Compile `model`'s eval forward on `ids` afresh with provenance on, then profile it `repeats` times."""
    # compile id -> its FX graph, as dynamo hands them over (an attempt dynamo restarts hands its graph over again:
    # the last one is what runs)
    graphs: dict[str, tuple[FxNode, ...]] = {}

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        cid = torch._guards.CompileContext.current_compile_id()
        graphs[f"{cid.frame_id}/{cid.frame_compile_id}"] = fx_nodes(gm)
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    model.eval()
    try:
        with torch.no_grad():
            compiled = torch.compile(model, backend=backend)
            with _provenance() as found:
                compiled(ids)
            if not graphs:
                raise InputError("dynamo captured no graph of this model's forward (it ran it eagerly: the compiled "
                                 "side's graph breaks say why), so inductor made no kernel to profile")
            compiled(ids)  # (a first call may still allocate and warm its kernels)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(repeats):
                    with record_function(_REPEAT):  # each forward's events, told apart
                        compiled(ids)
    finally:
        torch._dynamo.reset()
    mapped = dict(found.found)  # a graph inductor generated no code for (nothing to compute) has no mapping
    maps = [_kernels_to_fx(mapped.get(cid, {})) for cid in graphs]
    return _costs(tuple(graphs.values()), list(graphs), maps, list(prof.events()), repeats)


def _event_name(kernel: str) -> str:
    """What the profiler calls a kernel of the mapping: a generated one by its name (its event says
    graph_<n>_<name>), a call into ATen by the operator's name ("extern_kernels.addmm", or a fallback
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default")."""
    if kernel.startswith("extern_kernels."):
        return "aten::" + kernel.removeprefix("extern_kernels.")
    if kernel.startswith("torch.ops."):
        _, _, namespace, op, *_ = kernel.split(".")
        return f"{namespace}::{op}"
    return kernel


def _costs(graphs: tuple[tuple[FxNode, ...], ...], compile_ids: list[str], maps: list[dict[str, tuple[str, ...]]],
           events: list[Any], repeats: int) -> KernelCosts:
    """The kernels' times from the profiler's events: each compiled region names its compile id, so its graph;
    inside the graph's call the n-th event of a kernel's name is the n-th place the generated code calls it (a
    kernel two layers share is called at two places; an ATen operator only where the call made it directly)."""
    starts = sorted(e.time_range.start for e in events if e.name == _REPEAT)  # each profiled forward's start
    per_kernel: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0] * repeats)
    region_us = [0.0] * repeats
    places: list[dict[str, list[str]]] = []
    for m in maps:  # event name -> the mapping's kernels of that name, in the generated code's order
        named: dict[str, list[str]] = defaultdict(list)
        for _, k in sorted((int(_CALL.match(k).group(2)), k) for k in m):
            named[_event_name(_CALL.match(k).group(1))].append(k)
        places.append(named)
    for region in (e for e in events if _REGION.match(e.name)):
        r = bisect.bisect_right(starts, region.time_range.start) - 1  # the forward it ran in
        region_us[r] += region.cpu_time_total
        cid = region.name.rsplit(" ", 1)[1]
        if cid not in compile_ids:
            continue
        g = compile_ids.index(cid)
        inside = [e for e in events if e.id != region.id and e.thread == region.thread and _within(e, region)]
        for call in (e for e in inside if e.name.startswith("## Call CompiledFxGraph")):
            seen: dict[str, int] = defaultdict(int)
            for e in (e for e in inside if e.id != call.id and _within(e, call)):
                generated = _GENERATED.match(e.name)
                name = generated.group(1) if generated else e.name
                if not generated and not (e.name.startswith("aten::") and _made_by(e, call)):
                    continue
                if seen[name] < len(places[g].get(name, ())):
                    per_kernel[(g, places[g][name][seen[name]])][r] += e.cpu_time_total
                seen[name] += 1
    kernels, unmatched = [], []
    for g, m in enumerate(maps):
        for k, fx in m.items():
            name = _CALL.match(k).group(1)
            if (g, k) in per_kernel:
                kernels.append(Kernel(tuple(per_kernel[(g, k)]), name, g, fx, _event_name(name) == name))
            else:
                unmatched.append(name)
    kernels.sort(key=lambda k: -k.us)
    return KernelCosts(graphs, tuple(kernels), Sampled(tuple(region_us)), tuple(unmatched))


def _within(e: Any, outer: Any) -> bool:
    return e.time_range.start >= outer.time_range.start and e.time_range.end <= outer.time_range.end


def _made_by(e: Any, call: Any) -> bool:
    """`e` is an operator the graph's call made itself, not one inside another operator."""
    p = e.cpu_parent
    while p is not None and p.id != call.id:
        if p.name.startswith("aten::"):
            return False
        p = p.cpu_parent
    return p is not None
