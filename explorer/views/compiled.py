"""The Playground's compiled side as plain data: cards, the compile timeline, graph breaks, figures."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun
from explorer.core.fmt import format_bytes
from explorer.core.progress import Progress
from explorer.draw.style import Unchecked
from explorer.eager.compare import rounded
from explorer.runs.session import Session
from explorer.views.figures import compiled_figure, fx_figure
from explorer.views.report import build_report
from explorer.workers.protocol import JobRunner


@dataclass
class CompiledView:
    cards: list[tuple[str, str, str]]
    status: str
    timeline: list[list[Any]]  # rows of TIMELINE_COLUMNS
    breaks: str  # markdown
    figure: go.Figure  # eager vs compiled against length
    graph: Unchecked | None  # the latest captured FX graph
    code: str  # ... as code
    report: dict[str, Any]


TIMELINE_COLUMNS = ["#", "tokens", "graph", "function", "shapes", "compile s", "inductor cache", "why it compiled",
                    "architecture", "options"]


def compiled_cards(c: CompiledRun) -> list[tuple[str, str, str]]:
    m, e, pair = c.compiled, c.eager, c.comparison
    tag = " (eager fallback!)" if c.fallback and m else ""
    be = c.break_even
    return [
        ("compiled forward", f"{m.median_ms:.3f} ms" if m else "failed",
         m.spread() + tag if m else "see the message above"),
        ("speed-up vs eager", "none" if c.speedup is None or pair is None else
         f"{c.speedup:.2f}x" + ("" if pair.resolved else " (not resolved)"),
         "no compiled code ran: see the message above" if c.fallback or pair is None or e is None else
         f"{pair.said()}; eager re-timed {e.median_ms:.3f} ms in the same process, interleaved"),
        ("compile time", f"{c.total_compile_s:.2f} s", f"{c.cache}; " + (
            f"this input: {c.compile_s:.2f} s" if c.events else "this input compiled nothing (a graph compiled "
            "before served it)")),
        ("break-even", "not reached" if be is None else f"{rounded(be.value)} calls",
         "compile time / per-call saving, once compiled is faster by its whole interval" if be is None else
         f"{be.said()} calls by the speed-up's interval; {c.total_compile_s:.2f} s of compiling, {c.cache}"),
        ("peak memory", format_bytes(c.peak_compiled_bytes), f"eager {format_bytes(c.peak_eager_bytes)} (no_grad)"),
        ("graphs", f"{c.graph_count}", f"{c.explanation.breaks_said()} when it compiled, "
         f"at {len(c.explanation.graph_breaks)} place(s)"),
    ]


COMPILED_CARDS = ("compiled forward", "speed-up vs eager", "compile time", "break-even", "peak memory", "graphs")


def pending_cards(arch: str, tokens: int) -> list[tuple[str, str, str]]:
    """The compiled cards while the run on screen compiles: no earlier run's figures beside its eager ones."""
    return [(label, "…", f"compiling {arch}, {tokens} tokens") for label in COMPILED_CARDS]


def breaks_markdown(c: CompiledRun) -> str:
    ex = c.explanation
    if c.fallback and c.fallback.startswith("compile failed"):
        return f"**The compile failed**: {c.fallback.removeprefix('compile failed: ')}"
    if ex.skipped:
        return f"**Dynamo captured no graph at all**: it skipped this model's forward. Why: {ex.skipped_said()}."
    when = f"when dynamo compiled the {ex.length}-token input ({ex.graph_count} graph(s))"
    if not ex.graph_breaks:
        return f"**No graph breaks** {when}."
    lines = [f"**{ex.graph_break_count} graph break(s)** (dynamo's count), at {len(ex.graph_breaks)} place(s), {when}:"]
    for b in ex.graph_breaks:
        lines.append(f"- `{b.where}`: `{b.code}`" + (f" ({b.times} times)" if b.times > 1 else "")
                     + f"  \n  {b.reason}. {b.explanation}"
                     + ("  \n  Dynamo gave up on this whole function: it runs eagerly, and only the modules it "
                        "calls are compiled, each as its own graph." if b.skipped else ""))
    return "\n".join(lines)


def compiled_view(session: Session, c: CompiledRun) -> CompiledView:
    track = session.compile_track
    latest = next((e for r in reversed(track.runs) for e in reversed(r.events)), None)
    status = (f"**Not a compiled figure**: {c.fallback}" if c.fallback else
              f"Compiled with {c.options.label()}; eager and compiled timed back to back in the compile worker "
              f"(cpu, {c.compiled.threads} thread(s), torch.utils.benchmark).")
    rows = [[i + 1, t.event.length, t.event.compile_id, t.event.frame, "symbolic" if t.event.dynamic else "static",
             round(t.event.compile_s, 3), t.event.cache or "—", t.event.reason, t.arch, t.options]
            for i, t in enumerate(track.timeline)]
    return CompiledView(
        cards=compiled_cards(c), status=status, timeline=rows, breaks=breaks_markdown(c),
        figure=compiled_figure(track.runs), graph=fx_figure(latest) if latest else None,
        code=latest.code if latest else "# no graph was captured",
        report=build_report(session.last, track) if session.last else {},
    )


def compiled_update(session: Session, service: JobRunner, options: CompileOptions) -> Iterator[Progress | CompiledView]:
    """Compile the latest input: yields progress messages (the first at once: a forked worker may compile a short
    input within a second, before it says anything), then the view."""
    yield Progress(0.0, f"Compiling ({options.label()}): starting")
    for item in session.run_compiled(service, options):
        if isinstance(item, Progress):
            yield Progress(item.elapsed_s, f"Compiling ({options.label()}): {item.phase}")
        else:
            yield compiled_view(session, item)
