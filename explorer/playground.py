"""The Playground view as plain data: what the UI shows for a run, with no UI library involved.

`app.py` wires these functions to components; tests call them directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.compare import CompiledRun
from explorer.compiled import CompileOptions
from explorer.figures import compiled_figure, fx_figure, graph_figure, history_figure
from explorer.queueing import Turn, queued
from explorer.report import build_report, format_bytes
from explorer.session import RunResult, Session
from explorer.worker import CompileService, Progress
from models import ZOO, Knob, entry
from models.tokenizer import encode

_EXAMPLE_TEXTS = (
    "a",
    "Hello",
    "The cat sat on the mat, and then it slept.",
    "Graphs 📈 grow: граф, 图, グラフ!",
    "Define-by-run means the graph is built while the program runs. Every time you call the "
    "model, PyTorch records the operations it actually executed, so a loop over the tokens "
    "leaves one copy of its body per token, and an if leaves only the branch it took.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
    "age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the "
    "season of Light, it was the season of Darkness, it was the spring of hope, it was the winter "
    "of despair, we had everything before us, we had nothing before us, we were all going direct "
    "to Heaven, we were all going direct the other way; in short, the period was so far like the "
    "present period.",
)


def _example_label(text: str) -> str:
    n = len(encode(text))
    return f"{n} token{'s' * (n != 1)}: {text if len(text) <= 16 else text[:14] + '…'}"


EXAMPLES: dict[str, str] = {_example_label(t): t for t in _EXAMPLE_TEXTS}
DEFAULT_TEXT = _EXAMPLE_TEXTS[2]


def control_specs() -> list[tuple[str, Knob]]:
    """Every (model, knob) in a fixed order: the UI makes one control per entry."""
    return [(name, k) for name, e in ZOO.items() for k in e.knobs()]


def values_for(model: str, flat: list[Any]) -> dict[str, Any]:
    """The config values of `model` out of the flat list of every control's value."""
    return {k.name: v for (m, k), v in zip(control_specs(), flat, strict=True) if m == model}


@dataclass
class View:
    graph: go.Figure
    cards: list[tuple[str, str, str]]  # (label, value, detail)
    history: go.Figure
    diff: str
    report: dict[str, Any]
    status: str


def cards(r: RunResult) -> list[tuple[str, str, str]]:
    fw, tr, g = r.forward, r.train_step, r.capture.graph
    mem = r.memory
    runs = f"median of {fw.runs} runs, IQR {fw.iqr_ms:.3f} ms"
    (what, n), *rest = entry(r.model).structure(r.capture.trace).items()
    return [
        ("tokens", f"{r.tokens}", "UTF-8 bytes" + (" (truncated)" if r.input.truncated_from else "")),
        (what, f"{n}", ", ".join(f"{k}: {v}" for k, v in rest) or "decided by this input"),
        ("graph nodes", f"{len(g.nodes):,}", f"{len(g.edges):,} edges, {len(g.param_leaves)} param leaves"),
        ("parameters", f"{r.params:,}", format_bytes(r.param_bytes)),
        ("forward", f"{fw.median_ms:.3f} ms", runs),
        ("train step", f"{tr.median_ms:.3f} ms", f"median of {tr.runs} runs, IQR {tr.iqr_ms:.3f} ms"),
        ("saved for backward", format_bytes(r.capture.saved_bytes), "activations, deduplicated"),
        ("peak memory", format_bytes(mem.train if mem else None),
         f"train step; forward {format_bytes(mem.forward)}" if mem else "profiling…"),
    ]


def _view(session: Session, r: RunResult, status: str) -> View:
    return View(
        graph=graph_figure(r),
        cards=cards(r),
        history=history_figure(session.history),
        diff=r.diff.text() if r.diff else "First run of this session: change the input or the architecture to diff.",
        report=build_report(r, session.compile_track.timeline, session.compile_track.runs),
        status=status,
    )


def update(session: Session, model: str, text: str, compare: str, values: dict[str, Any]) -> Iterator[str | View]:
    """Reconfigure if needed, wait for the measurement queue (yielding messages), run, and yield the view
    twice: at once, then with the profiler's memory."""
    session.configure(model, values)  # validation first: a bad config never waits in the queue

    def work(turn: Turn) -> Iterator[View]:
        r = session.run(text, compare, budget_scale=turn.budget_scale)
        notes = " ".join([*r.notices, *filter(None, [turn.notice()])])
        m = r.forward
        measured = (f"Measured on cpu, {m.threads} thread(s), torch.utils.benchmark ({m.runs} runs); memory from "
                    "torch.profiler.")
        view = _view(session, r, f"{notes} Profiling memory… {measured}".strip())
        yield view
        session.measure_memory(r)
        view.cards = cards(r)
        view.report = build_report(r, session.compile_track.timeline, session.compile_track.runs)
        view.history = history_figure(session.history)
        view.status = f"{notes} {measured}".strip()
        yield view

    yield from queued(work)


@dataclass
class CompiledView:
    cards: list[tuple[str, str, str]]
    status: str
    timeline: list[list[Any]]  # rows of TIMELINE_COLUMNS
    breaks: str  # markdown
    figure: go.Figure  # eager vs compiled against length
    graph: go.Figure | None  # the latest captured FX graph
    code: str  # ... as code
    report: dict[str, Any]


TIMELINE_COLUMNS = ["#", "tokens", "graph", "function", "shapes", "compile s", "why it compiled", "architecture",
                    "options"]


def _compiled_cards(c: CompiledRun) -> list[tuple[str, str, str]]:
    m, e = c.compiled, c.eager
    tag = " (eager fallback!)" if c.fallback and m else ""
    be = c.break_even_calls
    return [
        ("compiled forward", f"{m.median_ms:.3f} ms" if m else "failed",
         f"median of {m.runs} runs, IQR {m.iqr_ms:.3f} ms{tag}" if m else "see the message above"),
        ("speed-up vs eager", f"{c.speedup:.2f}x" if c.speedup else "—",
         f"eager re-timed {e.median_ms:.3f} ms, same process and threads" if e else ""),
        ("compile time", f"{c.total_compile_s:.2f} s", f"this input: {c.compile_s:.2f} s"),
        ("break-even", "never" if be is None else f"{be:,} calls", "compile time / per-call saving"),
        ("peak memory", format_bytes(c.peak_compiled_bytes), f"eager {format_bytes(c.peak_eager_bytes)} (no_grad)"),
        ("graphs", f"{c.graph_count}", f"{max(c.explain.get('graph_break_count', 0), 0)} graph breaks (explain)"),
    ]


def _breaks_markdown(c: CompiledRun) -> str:
    ex = c.explain
    if ex.get("graph_count") == 0:
        return ("**Dynamo captured no graph at all**: it skipped this model's forward, so `torch.compile` runs it "
                "eagerly (torch 2.13 skips `nn.RNN/GRU/LSTM` unless `torch._dynamo.config.allow_rnn = True`).")
    if not c.graph_breaks:
        return f"**No graph breaks**: `torch._dynamo.explain` finds {ex.get('graph_count')} graph(s) for this input."
    lines = [f"**{ex['graph_break_count']} graph break(s)** (`torch._dynamo.explain`: {ex['graph_count']} graphs):"]
    for b in c.graph_breaks:
        lines.append(f"- `{b['where']}`: `{b['code']}`  \n  {b['reason']}. {b['explanation']}"
                     + ("  \n  Dynamo gave up on this whole function: it runs eagerly, and only the modules it "
                        "calls are compiled, each as its own graph." if b["skipped"] else ""))
    return "\n".join(lines)


def compiled_view(session: Session, c: CompiledRun) -> CompiledView:
    track = session.compile_track
    latest = next((e for r in reversed(track.runs) for e in reversed(r.events)), None)
    status = (f"**Not a compiled figure**: {c.fallback}" if c.fallback else
              f"Compiled with {c.options.label()}; eager and compiled timed back to back in the compile worker "
              f"(cpu, {c.compiled.threads} thread(s), torch.utils.benchmark).")
    rows = [[i + 1, e["length"], e["compile_id"], e["frame"], "symbolic" if e["dynamic"] else "static",
             round(e["compile_s"], 3), e["reason"], e["arch"], e["options"]] for i, e in enumerate(track.timeline)]
    return CompiledView(
        cards=_compiled_cards(c), status=status, timeline=rows, breaks=_breaks_markdown(c),
        figure=compiled_figure(track.runs), graph=fx_figure(latest) if latest else None,
        code=latest["code"] if latest else "# no graph was captured",
        report=build_report(session.last, track.timeline, track.runs) if session.last else {},
    )


def compiled_update(session: Session, service: CompileService, options: CompileOptions) -> Iterator[str | CompiledView]:
    """Compile the latest input: yields progress messages, then the view."""
    for item in session.run_compiled(service, options):
        if isinstance(item, Progress):
            yield f"Compiling ({options.label()}): {item.elapsed_s:.1f} s, {item.phase}…"
        else:
            yield compiled_view(session, item)
