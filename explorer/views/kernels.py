"""Where the compiled forward's time went, as the Playground, the CLI and a notebook show it: inductor's kernels,
each with the FX nodes it computes, and the captured graph coloured by each node's share (explorer/compile/kernels.py
measures them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from explorer.compile.kernels import KernelCosts, KernelsJob
from explorer.core.errors import InputError
from explorer.core.fmt import count
from explorer.core.progress import Progress
from explorer.draw.graph import draw_graph, fx_graph
from explorer.draw.style import Unchecked
from explorer.runs.session import RunResult, Session
from explorer.views.tables import format_rows
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import Workers, run_said
from models.config import config_dict

KERNEL_COLUMNS = ["kernel", "graph", "µs per forward (median)", "IQR µs", "share of the kernels' time",
                  "written by", "FX nodes it computes"]
NAMED_NODES = 6  # FX nodes named per kernel in the table (a fused kernel may compute dozens)


@dataclass(frozen=True)
class KernelsView:
    said: str
    graph: Unchecked  # the captured graph with the most kernel time, coloured and sized by each node's share
    rows: list[list[Any]]  # KERNEL_COLUMNS
    report: dict[str, Any]
    text: str  # all of it as the CLI and a notebook print it


def kernels_update(session: Session, workers: Workers) -> Iterator[Progress | KernelsView]:
    """The latest run's input compiled afresh and its kernels profiled, in a worker of its own (the job resets
    dynamo, which the session's compile worker must not: it holds the session's graphs)."""
    if not workers.fresh:  # a notebook's own object: compiled in the notebook's process, where a reset would drop it
        raise InputError("the kernels are profiled by a fresh compile in a process of its own, and this model lives "
                         "only in this notebook: save it in a file and explore it by the file's path")
    run = session.last
    if run is None:
        raise InputError("Run an input first: its compiled forward is what gets profiled")
    job = KernelsJob(run.model, config_dict(run.config), run.input.ids[0].tolist())
    runner = WorkerProcess(name="kernels", max_jobs=1, advice="Try a shorter input.")
    try:
        costs = yield from run_said(runner, job, "the compiled kernels")
    finally:
        runner.stop()
    yield kernels_view(costs, run)


def kernels_view(costs: KernelCosts, run: RunResult) -> KernelsView:
    total = costs.kernels_us or 1.0
    rows = [[k.name, k.graph, round(k.us, 1), round(k.iqr_us, 1), f"{k.us / total:.0%}",
             "inductor (C++)" if k.generated else "ATen",
             ", ".join(k.fx_nodes[:NAMED_NODES]) + (f" and {len(k.fx_nodes) - NAMED_NODES} more"
                                                    if len(k.fx_nodes) > NAMED_NODES else "")]
            for k in costs.kernels]
    busiest = max(range(len(costs.graphs)), key=lambda g: sum(k.us for k in costs.kernels if k.graph == g))
    nodes = costs.graphs[busiest]
    shares = costs.node_us(busiest)
    index = {n.name: i for i, n in enumerate(nodes)}
    computing = [n for n in nodes if n.op.startswith("call_")]
    untimed = Counter(n.target for n in computing if n.name not in shares)
    outside = costs.region.us - costs.kernels_us
    said = [f"The compiled forward of {count(run.tokens, 'token')} ({run.arch}), compiled afresh with inductor and "
            f"profiled {costs.repeats} times: {count(len(costs.kernels), 'kernel')} of "
            f"{count(len(costs.graphs), 'captured graph')} took **{costs.kernels_us:,.1f} µs** (their medians "
            f"summed) of the compiled regions' {costs.region.us:,.1f} µs per forward (median, IQR "
            f"{costs.region.iqr_us:,.1f}); the other {max(outside, 0.0):,.1f} µs ran outside any kernel (dynamo's "
            "guards, the generated wrapper's Python, allocation, and the profiler's own cost per event)."]
    if costs.kernels:
        top = costs.kernels[0]
        said.append(f"The costliest: `{top.name}` ({top.us:,.1f} µs, {top.us / total:.0%} of the kernels' time), "
                    f"computing {count(len(top.fx_nodes), 'FX node')}" +
                    (f" ({', '.join(top.fx_nodes[:3])}{'…' if len(top.fx_nodes) > 3 else ''})." if top.fx_nodes
                     else "."))
    # (a node no kernel's provenance names: a view with no code of its own, or one a pattern replaced, whose
    # replacement's provenance names other nodes)
    none = (": inductor's provenance names no kernel for the others (" + ", ".join(
        f"{t} ×{n}" for t, n in untimed.most_common(4)) + (", …" if len(untimed) > 4 else "") + ")") if untimed else ""
    said.append(f"Of the drawn graph's {count(len(computing), 'computing node')}, "
                f"{len(computing) - sum(untimed.values())} are traced to a kernel{none}. A fused kernel's time is "
                "shared evenly among the FX nodes it computes.")
    if costs.unmatched:
        said.append(f"Not found in the profile: {', '.join(sorted(set(costs.unmatched)))}.")
    said.append("The profiler's times carry its own cost: read the shares, not the absolute µs (the card's compiled "
                "forward is timed without it).")
    title = (f"Captured FX graph {busiest + 1} of {len(costs.graphs)}, coloured and sized by each node's share of "
             "its kernels' time<br><sup>{drawn}</sup>")
    graph = draw_graph(fx_graph(nodes), title, colour_by="op kind",
                       heat={index[n]: us for n, us in shares.items() if n in index}, timed="its kernels' share")
    report = {"kernels_us": costs.kernels_us, "region_us": costs.region.us, "repeats": costs.repeats,
              "region_samples_us": list(costs.region.samples), "graphs": len(costs.graphs),
              "unmatched": list(costs.unmatched),
              "kernels": [{"name": k.name, "graph": k.graph, "us": k.us, "iqr_us": k.iqr_us,
                           "samples_us": list(k.samples), "generated": k.generated, "fx_nodes": list(k.fx_nodes)}
                          for k in costs.kernels]}
    text = "\n".join([" ".join(said).replace("**", "").replace("`", ""), "",
                      format_rows(KERNEL_COLUMNS, rows)])
    return KernelsView(" ".join(said), graph, rows, report, text)
