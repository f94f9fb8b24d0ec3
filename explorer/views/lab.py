"""The batching lab's view as plain data (the app wires it; tests call it directly)."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.compile.protocol import JobRunner
from explorer.core.errors import InputError
from explorer.core.fmt import format_bytes, format_flops, ms_iqr
from explorer.lab.batches import batch_from_lines, generate_batch
from explorer.lab.results import LabRun
from explorer.lab.runner import compile_lab
from explorer.serving.queueing import Turn, queued
from explorer.session import Session
from explorer.views.figures import lab_lengths_figure, lab_time_figure, lab_waste_figure

LAB_COLUMNS = ["strategy", "forward", "train step", "tokens/s", "padding", "GFLOP (useful)",
               "peak memory", "shapes", "max |diff| vs loop", "compiled forward", "speed-up", "compiles",
               "note"]


def lab_texts(source: str, lines: str, n: int, distribution: str, min_len: int, max_len: int,
              seed: int) -> list[str]:
    """The batch: the typed lines, or N generated sentences."""
    if source == "typed":
        return batch_from_lines(lines or "")
    return generate_batch(int(n), distribution, int(min_len), int(max_len), int(seed))


@dataclass
class LabView:
    status: str
    lengths: go.Figure
    time: go.Figure
    waste: go.Figure
    table: list[list[Any]]  # rows of LAB_COLUMNS
    verdict: str  # markdown
    report: dict[str, Any]


def _row(s: dict[str, Any]) -> list[Any]:
    if not s["supported"]:
        return [s["title"], *["—"] * 11, s["note"]]
    c = s["compiled"]
    status = c and (c["error"] or c["fallback"])
    note = "; ".join(x for x in ("" if s["agrees"] else "DISAGREES with the loop", s["note"]) if x)
    if c and (status or c["graph_breaks"]):
        note = "; ".join(x for x in (note, status or "graph break: " + "; ".join(c["graph_breaks"])) if x)
    return [
        s["title"], ms_iqr(s["forward_ms"], s["forward_iqr_ms"]), ms_iqr(s["train_step_ms"], s["train_step_iqr_ms"]),
        f"{s['tokens_per_s']:,.0f}", f"{s['padding_fraction']:.0%}",
        format_flops(s),
        format_bytes(s["peak_bytes"]), s["distinct_shapes"], f"{s['max_abs_diff']:.1e}",
        "—" if not c or status else ms_iqr(c["forward_ms"], c["forward_iqr_ms"]),
        "—" if not c or c["speedup"] is None else f"{c['speedup']:.2f}x", "—" if not c else c["compiles"], note,
    ]


def _view(report: dict[str, Any], status: str) -> LabView:
    return LabView(status, lab_lengths_figure(report), lab_time_figure(report), lab_waste_figure(report),
                   [_row(s) for s in report["strategies"]], report["verdict"], report)


def _measured(report: dict[str, Any]) -> str:
    m = report["machine"]
    return (f"{report['arch']}; measured on {m['device']}, {m['threads']} thread(s) with torch.utils.benchmark; "
            "peak memory from torch.profiler; FLOPs from FlopCounterMode.")


def lab_update(session: Session, texts: list[str], bucket_width: int) -> Iterator[str | LabView]:
    """Run every strategy eagerly on the session's current model, in its turn of the measurement queue:
    progress strings, then the view."""

    def work(turn: Turn) -> Generator[str, None, tuple[dict[str, Any], str | None]]:
        start = time.monotonic()
        for item in session.run_lab(texts, int(bucket_width), budget_scale=turn.budget_scale):
            if isinstance(item, LabRun):
                report = item.report()
            else:
                yield f"Eager: timing *{item}* ({time.monotonic() - start:.1f} s)…"
        return report, turn.notice()

    report, notice = yield from queued(work)  # the figures are drawn after the turn, off the measuring core's time
    yield _view(report, " ".join(filter(None, [notice, _measured(report)])))


def lab_compiled_update(session: Session, backend: str, service: JobRunner) -> Iterator[str | LabView]:
    """Compile each strategy of the session's latest lab run in the worker: progress, then the full view."""
    run = session.lab
    if run is None:
        raise InputError("Run the lab first; compiling times the same batch.")
    for p in compile_lab(service, run, backend):
        yield f"Compiled: {p.phase} ({p.elapsed_s:.0f} s)…"
    report = run.report()
    yield _view(report, f"Eager and compiled ({backend}; fresh dynamo state per strategy; forward without grad and "
                        f"train step). {_measured(report)}")
