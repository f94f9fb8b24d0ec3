"""The batching lab's view: a typed lab run turned into its table, figures, verdict and report, and the report
as the CLI prints it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from explorer.core.fmt import format_bytes, format_flops, ms_iqr
from explorer.core.machine import Machine, this_machine
from explorer.eager.timing import Measurement
from explorer.labs.batching.figures import lab_lengths_figure, lab_time_figure, lab_waste_figure
from explorer.labs.batching.results import LabRun, StrategyResult
from explorer.labs.contract import Kind, Output
from models import arch_label

# the note second: a wide table scrolls sideways, and the note says why a row's figures are missing
LAB_COLUMNS = ("strategy", "note", "forward", "train step", "tokens/s", "padding", "GFLOP (useful)",
               "peak memory", "shapes", "max |diff| vs loop", "compiled forward", "speed-up", "compiles")
OUTPUTS = (
    Output("verdict", Kind.MARKDOWN),
    Output("table", Kind.TABLE, "per strategy (whole batch; medians with their IQR)", LAB_COLUMNS, prose=("note",)),
    Output("lengths", Kind.PLOT, "length histogram", row=1),
    Output("waste", Kind.PLOT, "wasted work", row=1),
    Output("time", Kind.PLOT, "time per strategy"),
)


@dataclass(frozen=True)
class BatchOutcome:
    """A lab run as far as it went: eager only, then with each strategy compiled (`backend`), and how its
    timings were planned (`notice`: a wait in the measurement queue, a budget cut under load)."""

    run: LabRun
    notice: str | None = None
    backend: str = ""


@dataclass
class LabView:
    status: str
    verdict: str  # markdown
    table: list[list[Any]]  # rows of LAB_COLUMNS
    lengths: go.Figure
    waste: go.Figure
    time: go.Figure
    report: dict[str, Any]


def _ms(m: Measurement | None) -> str:
    return "—" if m is None else ms_iqr(m.median_ms, m.iqr_ms)


def _row(s: StrategyResult) -> list[Any]:
    if not s.supported:
        return [s.title, s.note, *["—"] * 11]
    c = s.compiled
    status = c and (c.error or c.fallback)
    note = "; ".join(x for x in ("" if s.agrees else "DISAGREES with the loop", s.note) if x)
    if c and (status or c.graph_breaks):
        note = "; ".join(x for x in (note, status or "graph break: " + "; ".join(c.graph_breaks)) if x)
    return [
        s.title, note, _ms(s.forward), _ms(s.train_step), f"{s.tokens_per_s:,.0f}", f"{s.padding_fraction:.0%}",
        format_flops(s.flops_total, s.flops_useful), format_bytes(s.peak_bytes), s.distinct_shapes,
        f"{s.max_abs_diff:.1e}", "—" if not c or status else _ms(c.forward),
        "—" if not c or not c.ran else f"{c.ran.ratio:.2f}x" + ("" if c.ran.resolved else " (not resolved)"),
        "—" if not c else c.compiles,
    ]


def _measured(run: LabRun) -> str:
    return (f"{arch_label(run.model, run.config)}; measured on {this_machine().line()} with torch.utils.benchmark; "
            "peak memory from torch.profiler; FLOPs from FlopCounterMode.")


def view_of(outcome: BatchOutcome) -> LabView:
    run, report = outcome.run, outcome.run.report()
    done = (f"Eager and compiled ({outcome.backend}; fresh dynamo state per strategy; forward without grad and "
            "train step).") if outcome.backend else None
    status = " ".join(filter(None, [outcome.notice, done, _measured(run)]))
    # The figures draw the report (the session's HTML export draws the same report later).
    return LabView(status, run.result.verdict(), [_row(s) for s in run.result.strategies],
                   lab_lengths_figure(report), lab_waste_figure(report), lab_time_figure(report), report)


def format_lab(report: dict[str, Any]) -> str:
    """The batching lab's report as a table, one row per strategy (`batch` without --json)."""
    m = report["machine"]
    lengths = report["lengths"]
    lines = [f"{report['sentences']} sentences, {report['tokens']} tokens, lengths {min(lengths)}..{max(lengths)}; "
             f"{report['model']}; measured on {Machine.of(m).line()}",
             f"{'strategy':<30} {'forward':>22} {'train step':>22} {'tok/s':>9} {'pad':>5} {'GFLOP':>7} "
             f"{'useful':>7} {'peak':>10} {'shapes':>6} {'max|diff|':>9}"]
    for s in report["strategies"]:
        if not s["supported"]:
            lines.append(f"{s['title']:<30} not supported: {s['note']}")
            continue
        lines.append(
            f"{s['title']:<30} {ms_iqr(s['forward_ms'], s['forward_iqr_ms']):>22} "
            f"{ms_iqr(s['train_step_ms'], s['train_step_iqr_ms']):>22} {s['tokens_per_s']:>9,.0f} "
            f"{s['padding_fraction']:>5.0%} {format_flops(s['flops_total'], s['flops_useful']):>15} "
            f"{format_bytes(s['peak_bytes']):>10} {s['distinct_shapes']:>6} {s['max_abs_diff']:>9.1e}"
            + ("" if s["agrees"] else "  DISAGREES with the loop") + (f"  ({s['note']})" if s["note"] else ""))
        c = s["compiled"]
        if c is not None:
            status = c["error"] or c["fallback"]
            lines.append(f"{'  compiled (' + c['backend'] + ')':<30} "
                         + (f"NOT COMPILED: {status}" if status else
                            f"{ms_iqr(c['forward_ms'], c['forward_iqr_ms']):>22} "
                            f"{ms_iqr(c['train_step_ms'], c['train_step_iqr_ms']):>22} "
                            f"{c['comparison']['said']}; {c['compiles']} compiles in "
                            f"{c['compile_s'] + c['train_compile_s']:.1f} s")
                         + "".join(f"\n{'':<32}graph break: {b}" for b in c["graph_breaks"]))
    lines.append(f"verdict: {report['verdict']}".replace("**", ""))
    return "\n".join(lines)
