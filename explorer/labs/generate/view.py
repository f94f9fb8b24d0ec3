"""The generation lab's view as plain data: per cache kind a row (the tokens against the reference's, prefill and
decode per token, compiled against eager with its interval, the compiles, the break-even), the decode step's
time and the cache's bytes against the position, the compiles step by step, and each prompt alone against the
padded batch (the UI, the CLI and the API show it; tests call it)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import plotly.colors
import plotly.graph_objects as go

from explorer.core import machine
from explorer.core.machine import Machine
from explorer.draw.graph import draw_graph
from explorer.draw.style import Unchecked, line_layout
from explorer.eager.capture import Capture
from explorer.eager.compare import measurement_of
from explorer.labs.contract import Kind, Output
from explorer.labs.generate.job import CacheRun
from explorer.labs.generate.results import GenerateResult
from models.decoder import CACHES

CACHE_COLUMNS = ("cache", "tokens vs the first", "max |logit diff|", "prefill ms (eager)",
                 "decode per token, eager (median, IQR)", "compiled: per token", "compiles (steps)",
                 "pays off after", "cache bytes at the end", "fail_on_recompile")
COMPILE_COLUMNS = ("cache", "step", "seconds", "why (the guard that failed)")
ALONE_COLUMNS = ("prompt", "tokens vs its batched row", "max |logit diff|", "seconds alone (median)")
OUTPUTS = (
    Output("verdict", Kind.MARKDOWN),
    Output("caches", Kind.TABLE, "per cache kind", CACHE_COLUMNS, prose=("compiled: per token", "fail_on_recompile")),
    Output("latency", Kind.PLOT, "decode time against the position", row=1),
    Output("memory", Kind.PLOT, "the cache's bytes against the position", row=1),
    Output("compiles", Kind.TABLE, "compiles, step by step", COMPILE_COLUMNS, prose=("why (the guard that failed)",)),
    Output("alone", Kind.TABLE, "each prompt alone against the padded batch", ALONE_COLUMNS),
    *(Output(f"graph_{kind}", Kind.PLOT, f"the chosen step's autograd graph, {kind} cache") for kind in CACHES),
)


@dataclass
class GenerateView:
    status: str
    verdict: str
    caches: list[list[Any]]
    latency: go.Figure
    memory: go.Figure
    compiles: list[list[Any]]
    alone: list[list[Any]]
    graph_none: Unchecked | None
    graph_dynamic: Unchecked | None
    graph_static: Unchecked | None
    report: dict[str, Any]


def _decode(run_s: list[list[float]], threads: int, cores: tuple[int, ...]) -> str:
    """Every warm run's decode steps (the prefill aside) as one measurement: 'median (IQR), N steps'."""
    m = measurement_of("decode", [s * 1e3 for r in run_s for s in r[1:]], 1, threads, cores, "")
    return f"{m.median_ms:.3f} ms (IQR {m.iqr_ms:.3f}), {m.runs} steps"


def _row(result: GenerateResult, run: CacheRun) -> list[Any]:
    same, diff = result.agreement(run)
    c = result.per_token(run)
    k = result.break_even(run)
    compiled = run.error or (c.said() if c else "not compiled")
    steps = ", ".join(str(x.at) for x in run.compiles) or "—"
    return [run.cache, "same" if same else "OTHER", f"{diff:.1g}",
            f"{statistics.median(r[0] for r in run.eager_s) * 1e3:.2f}", _decode(run.eager_s, run.threads, run.cores),
            compiled,
            f"{len(run.compiles)} ({steps})" if run.backend else "—",
            f"{k.said()} tokens ({result.compiled_cache(run)} compiles)" if k is not None else "—",
            f"{run.cache_bytes[-1]:,}", run.stance or "—"]


def latency_figure(result: GenerateResult) -> go.Figure:
    """Each step's median over the warm runs against the position it reads, its IQR as bars: the prefill a marker
    at the prompt's length, the decode steps a line."""
    fig = go.Figure()
    start = max(len(p.encode()) for p in result.prompts)
    palette = iter(plotly.colors.qualitative.Plotly * 2)
    for run in result.runs:
        for side, samples, dash in (("eager", run.eager_s, "solid"), ("compiled", run.compiled_s, "dash")):
            if not samples:
                continue
            name, colour = f"{run.cache}, {side}", next(palette)
            spread = [_quartiles([r[i] * 1e3 for r in samples]) for i in range(result.tokens)]
            med = [m for _, m, _ in spread]
            bars = {"type": "data", "symmetric": False, "array": [q3 - m for _, m, q3 in spread],
                    "arrayminus": [m - q1 for q1, m, _ in spread], "thickness": 1, "width": 0}
            fig.add_scatter(x=list(range(start + 1, start + result.tokens)), y=med[1:], mode="lines", name=name,
                            legendgroup=name, line={"dash": dash, "color": colour},
                            error_y={**bars, "array": bars["array"][1:], "arrayminus": bars["arrayminus"][1:]})
            # the prefill: a marker of the line's colour and legend entry (a legend of twelve squeezed the plot)
            fig.add_scatter(x=[start], y=med[:1], mode="markers", name=f"{name}: prefill", legendgroup=name,
                            showlegend=False, marker={"color": colour, "size": 9},
                            error_y={**bars, "array": bars["array"][:1], "arrayminus": bars["arrayminus"][:1]})
    return line_layout(fig, "Each step's forward, by cache kind (bars: IQR over the warm runs)",
                       "position (prompt + generated)", "ms per step (median)")


def _quartiles(ms: list[float]) -> tuple[float, float, float]:
    """(Q1, median, Q3) of one step's warm runs; a single run is its own spread."""
    if len(ms) < 2:
        return ms[0], ms[0], ms[0]
    q1, med, q3 = statistics.quantiles(ms, n=4)
    return q1, med, q3


def memory_figure(result: GenerateResult) -> go.Figure:
    fig = go.Figure()
    start = max(len(p.encode()) for p in result.prompts)
    for run in result.runs:
        fig.add_scatter(x=list(range(start, start + result.tokens)), y=run.cache_bytes, mode="lines",
                        name=run.cache)
    return line_layout(fig, "The key/value cache's size (none: nothing kept)", "position (prompt + generated)",
                       "cache bytes")


def step_figure(result: GenerateResult, kind: str) -> Unchecked | None:
    """The chosen step's autograd graph with a cache of `kind` (hover a node: its shapes show the cache read)."""
    run = next((r for r in result.runs if r.cache == kind), None)
    if run is None or run.graph is None:
        return None
    return graph_figure(run.graph, kind, result.graph_at)


def graph_figure(capture: Capture, kind: str, at: int) -> Unchecked:
    g = capture.graph
    what = "the prefill" if at == 0 else f"decode step {at}"
    return draw_graph(g, f"{kind} cache, {what}: {len(g.nodes)} nodes, {len(g.edges)} edges ({{drawn}})",
                      height=460)


def view_of(result: GenerateResult) -> GenerateView:
    report = result.as_dict() | {"machine": machine.describe()}
    first = result.runs[0]
    status = (f"{result.model}: {len(result.prompts)} prompt(s), {result.tokens} tokens each, greedy (the weights "
              "are random: the bytes are noise, what matters is that every cache kind generates the same ones). "
              f"Timed: {result.repeats} warm generation(s) per cache kind and side, step by step, interleaved, on "
              f"{machine.this_machine().line()}, {first.threads} thread(s).")
    compiles = [[r.cache, c.at, f"{c.seconds:.2f}", c.reason] for r in result.runs for c in r.compiles]
    alone = [[a.prompt, "same" if a.same_tokens else "OTHER", f"{a.max_diff:.1g}", f"{a.seconds:.3f}"]
             for a in result.alone]
    return GenerateView(status, f"**Verdict**: {result.verdict()}", [_row(result, r) for r in result.runs],
                        latency_figure(result), memory_figure(result), compiles, alone,
                        *(step_figure(result, kind) for kind in CACHES), report)


def format_generate(report: dict[str, Any]) -> str:
    """The generation lab's report as text (`generate` without --json)."""
    lines = [f"{report['model']}, {len(report['prompts'])} prompt(s), {report['tokens']} tokens, "
             f"{report['repeats']} warm run(s) per side; {Machine.of(report['machine']).line()}"]
    for c in report["caches"]:
        lines.append(f"{c['cache']:<8} tokens {'same' if c['same_tokens_as_reference'] else 'OTHER'} "
                     f"(logits within {c['max_logit_diff_vs_reference']:.1g}); decode per token "
                     f"{_decode(c['eager_s'], c['threads'], tuple(c['cores']))} "
                     f"eager; cache {c['cache_bytes'][-1]:,} bytes")
        if c["per_token"]:
            lines.append(f"{'':<9}compiled ({c['backend']}): {len(c['compiles'])} compile(s) at steps "
                         f"{[x['at'] for x in c['compiles']]}; {c['per_token']['said']}"
                         + (f"; pays off after {c['break_even_said']} tokens ({c['compile_cache']} compiles)"
                            if c["break_even_tokens"] else ""))
        if c["cuda_graphs"]:
            lines.append(f"{'':<9}{c['cuda_graphs']}")
        if c["error"]:
            lines.append(f"{'':<9}compiled: {c['error']}")
        if c["stance"]:
            lines.append(f"{'':<9}{c['stance']}")
    lines.append(f"verdict: {report['verdict']}")
    return "\n".join(lines)
