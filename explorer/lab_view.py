"""The batching lab's view as plain data (the app wires it; tests call it directly)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer import limits, machine
from explorer.batch_compiled import compile_lab
from explorer.batches import batch_from_lines, generate_batch
from explorer.batching import LabResult, iter_lab
from explorer.errors import InputError
from explorer.figures import lab_lengths_figure, lab_time_figure, lab_waste_figure
from explorer.queueing import Turn, queued
from explorer.report import format_bytes, format_flops
from explorer.session import Session, arch_label
from explorer.worker import CompileService
from models.config import config_dict

LAB_COLUMNS = ["strategy", "forward ms (IQR)", "train step ms (IQR)", "tokens/s", "padding", "GFLOP (useful)",
               "peak memory", "shapes", "max |diff| vs loop", "compiled forward ms", "speed-up", "compiles",
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


def _ms(median: float | None, iqr: float | None) -> str:
    return "—" if median is None else f"{median:.2f} ({iqr:.2f})"


def _row(s: dict[str, Any]) -> list[Any]:
    if not s["supported"]:
        return [s["title"], *["—"] * 11, s["note"]]
    c = s["compiled"]
    status = c and (c["error"] or c["fallback"])
    note = "; ".join(x for x in ("" if s["agrees"] else "DISAGREES with the loop", s["note"]) if x)
    if c and (status or c["graph_breaks"]):
        note = "; ".join(x for x in (note, status or "graph break: " + "; ".join(c["graph_breaks"])) if x)
    return [
        s["title"], _ms(s["forward_ms"], s["forward_iqr_ms"]), _ms(s["train_step_ms"], s["train_step_iqr_ms"]),
        f"{s['tokens_per_s']:,.0f}", f"{s['padding_fraction']:.0%}",
        format_flops(s),
        format_bytes(s["peak_bytes"]), s["distinct_shapes"], f"{s['max_abs_diff']:.1e}",
        "—" if not c or status else _ms(c["forward_ms"], c["forward_iqr_ms"]),
        "—" if not c or c["speedup"] is None else f"{c['speedup']:.2f}x", "—" if not c else c["compiles"], note,
    ]


@dataclass
class LabRun:
    """A session's latest lab run: what went in, and what came out (compiled figures fill in later)."""

    texts: list[str]
    bucket_width: int
    result: LabResult
    model: str
    config: Any

    def report(self) -> dict[str, Any]:
        return {"model": self.model, "config": config_dict(self.config), "arch": arch_label(self.model, self.config),
                "bucket_width": self.bucket_width, "machine": machine.describe(), "limits": limits.describe(),
                **self.result.as_dict()}


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

    def work(turn: Turn) -> Iterator[str | LabView]:
        start = time.monotonic()
        for item in iter_lab(session.model, texts, int(bucket_width), budget_scale=turn.budget_scale):
            if isinstance(item, str):
                yield f"Eager: timing *{item}* ({time.monotonic() - start:.1f} s)…"
            else:
                session.lab = LabRun(texts, int(bucket_width), item, session.model_name, session.config)
        report = session.lab.report()
        yield _view(report, " ".join(filter(None, [turn.notice(), _measured(report)])))

    yield from queued(work)


def lab_compiled_update(session: Session, backend: str, service: CompileService) -> Iterator[str | LabView]:
    """Compile each strategy of the session's latest lab run in the worker: progress, then the full view."""
    run = session.lab
    if run is None:
        raise InputError("Run the lab first; compiling times the same batch.")
    for p in compile_lab(service, run.result, run.model, config_dict(run.config), run.texts, run.bucket_width,
                         backend):
        yield f"Compiled: {p.phase} ({p.elapsed_s:.0f} s)…"
    report = run.report()
    yield _view(report, f"Eager and compiled ({backend}; fresh dynamo state per strategy; forward without grad and "
                        f"train step). {_measured(report)}")
