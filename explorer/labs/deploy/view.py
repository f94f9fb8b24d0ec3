"""The deployment lab's view as plain data: the route table, max |diff| against length per route, the exported
graph drawn next to the autograd graph, the downloads and the verdict (the UI, the CLI and the API show it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from explorer.core import machine
from explorer.core.fmt import format_bytes, ms_iqr
from explorer.core.machine import Machine
from explorer.draw.graph import draw_graph, fx_graph
from explorer.draw.style import Figure, Unchecked
from explorer.eager.capture import Capture
from explorer.labs.contract import Kind, Output
from explorer.labs.deploy.results import TOLERANCE, DeployResult, RouteResult

DEPLOY_COLUMNS = ("route", "outcome", "what happened", "user's line", "max |diff| per input", "build",
                  "artefact", "artefact vs eager (median, IQR)")
FLOOR = 1e-9  # a difference of exactly 0 is drawn here on the log axis
OUTPUTS = (
    Output("verdict", Kind.MARKDOWN),
    Output("table", Kind.TABLE, "per route", DEPLOY_COLUMNS, prose=("what happened",)),
    Output("diffs", Kind.PLOT, "max |diff| vs eager per input"),
    Output("autograd", Kind.PLOT, "autograd graph of this input (eager)", row=1),
    Output("exported", Kind.PLOT, "the exported program's graph", row=1),
    Output("code", Kind.CODE, "the exported program as code"),
    Output("downloads", Kind.FILES, "artefacts that were built (how to load each: under the verdict)"),
)


@dataclass(frozen=True)
class DeployOutcome:
    """The routes' results, and the autograd graph of the input they froze (captured eagerly, for comparison)."""

    result: DeployResult
    capture: Capture


@dataclass
class DeployView:
    status: str
    verdict: str  # markdown
    table: list[list[Any]]  # rows of DEPLOY_COLUMNS
    diffs: go.Figure
    autograd: Unchecked
    exported: Figure  # plotly's note when nothing was exported
    code: str
    downloads: list[str]
    report: dict[str, Any]


def _diffs_cell(r: RouteResult) -> str:
    return "; ".join(f"{c.tokens}: {'error' if c.error else f'{c.max_abs_diff:.1g}'}" for c in r.checks) or "—"


def _speed(r: RouteResult) -> str:
    if r.latency is None or r.eager is None or r.comparison is None:
        return "—"
    artefact, eager = (ms_iqr(m.median_ms, m.iqr_ms, 3) for m in (r.latency, r.eager))
    c = r.comparison
    return (f"{artefact} vs eager {eager}: {c.ratio:.2f}x ({c.interval()}"
            + ("" if c.resolved or not c.enough else ", not resolved") + ")")


def _row(r: RouteResult) -> list[Any]:
    what = r.first_problem() or "correct on every input"
    extra = [w.message for w in r.warnings if w.category == "TracerWarning"] + r.notes
    return [r.route, r.outcome, "; ".join([what, *extra]), r.where or next((w.where for w in r.warnings if w.where),
                                                                           "—"),
            _diffs_cell(r), f"{r.seconds:.1f} s" if not r.skipped else "—",
            format_bytes(r.artefact_bytes) if r.artefact_bytes else "—", _speed(r)]


def diffs_figure(result: DeployResult, height: int = 380) -> go.Figure:
    """Max |artefact - eager| per checked input and route, log scale: a silently wrong route stands out above
    the tolerance line; an input the artefact refused is an x at the top."""
    fig = go.Figure()
    top = max([c.max_abs_diff or 0.0 for r in result.routes for c in r.checks] + [1.0]) * 10
    for r in result.routes:
        ran = [c for c in r.checks if c.max_abs_diff is not None]
        if ran:
            fig.add_scatter(x=[c.tokens for c in ran], y=[max(c.max_abs_diff, FLOOR) for c in ran], name=r.route,
                            mode="markers+lines", text=[c.label for c in ran],
                            hovertemplate="%{text}<br>max |diff| %{y:.3g}<extra>" + r.route + "</extra>")
        refused = [c for c in r.checks if c.error]
        if refused:
            fig.add_scatter(x=[c.tokens for c in refused], y=[top] * len(refused), name=f"{r.route}: refused",
                            mode="markers", marker={"symbol": "x", "size": 11}, text=[c.error for c in refused],
                            hovertemplate="%{text}<extra>" + r.route + "</extra>")
    fig.add_hline(y=TOLERANCE, line_dash="dot", annotation_text=f"tolerance {TOLERANCE:g}")
    fig.update_layout(title=f"Artefact vs eager, {result.model}: max |diff| per input (0 drawn at {FLOOR:g}; x = "
                            "refused)", xaxis_title="tokens", yaxis_title="max |diff|", yaxis_type="log",
                      height=height, margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig


def exported_graph(result: DeployResult) -> tuple[Figure, str]:
    """The first exported program's graph (drawn with the app's one graph renderer) and its code."""
    r = next((r for r in result.routes if r.fx), None)
    if r is None:
        return go.Figure().update_layout(title="No exported program: torch.export failed for this model (see the "
                                               "table)"), ""
    ops = sum(r.graph_ops.values())
    title = f"Exported program ({r.route}): {ops} aten ops, {len(r.graph_ops)} kinds; {r.notes[0]}"
    return draw_graph(fx_graph(r.fx), title, colour_by="op kind"), r.graph_code


def _measured(result: DeployResult) -> str:
    return (f"{result.model}, {result.tokens} tokens; each artefact checked against eager on "
            f"{len({c.label for r in result.routes for c in r.checks})} inputs; latencies measured on "
            f"{machine.this_machine().line()} (ONNX Runtime: 1 intra-op thread), torch.utils.benchmark, artefact and "
            "eager back to back in the deployment worker.")


def view_of(outcome: DeployOutcome) -> DeployView:
    result = outcome.result
    graph, code = exported_graph(result)
    report = result.as_dict() | {"machine": machine.describe()}
    loads = [f"- `{Path(r.artefact).name}` ({format_bytes(r.artefact_bytes)}, {r.route}, {r.outcome}): "
             f"`{r.load_snippet}`" for r in result.routes if r.artefact]
    verdict = f"**Verdict**: {result.verdict()}" + ("\n\n**To load an artefact**:\n" + "\n".join(loads)
                                                     if loads else "")
    g = outcome.capture.graph
    autograd = draw_graph(g, f"Autograd graph (eager): {len(g.nodes)} nodes ({{drawn}}); {result.model}, "
                             f"{result.tokens} tokens")
    return DeployView(_measured(result), verdict, [_row(r) for r in result.routes], diffs_figure(result), autograd,
                      graph, code, [f for r in result.routes for f in (r.artefact, r.report) if f], report)


def format_deploy(report: dict[str, Any]) -> str:
    """The deployment lab's report as text, one block per route (`deploy` without --json)."""
    m = report["machine"]
    lines = [f"{report['model']} {report['config']}, {report['tokens']} tokens; measured on {Machine.of(m).line()}"]
    for r in report["routes"]:
        size = format_bytes(r["artefact_bytes"]) if r["artefact_bytes"] else "no artefact"
        speed = (f"{r['latency']['median_ms']:.3f} ms vs eager {r['eager']['median_ms']:.3f} ms: "
                 f"{r['comparison']['said']}" if r["comparison"] else "not timed")
        lines.append(f"{r['route']:<18} {r['outcome'].upper():<15} built in {r['seconds']:.1f} s, {size}, {speed}")
        for what, text in (("skipped", r["skipped"]), ("error", r["error"]), ("at", r["where"])):
            if text:
                lines.append(f"{'':<4}{what}: {text}")
        for c in r["checks"]:
            lines.append(f"{'':<4}{c['label']}: " + (f"refused: {c['error']}" if c["error"] else
                                                     f"max |diff| {c['max_abs_diff']:.2g}"))
        lines += [f"{'':<4}{w['category']}: {w['message']}" + (f" ({w['where']})" if w["where"] else "")
                  for w in r["warnings"] if w["category"] == "TracerWarning"]
        lines += [f"{'':<4}note: {n}" for n in r["notes"]]
        if r["artefact"]:
            lines.append(f"{'':<4}artefact: {r['artefact']}  load: {r['load_snippet']}")
    lines.append(f"verdict: {report['verdict']}")
    return "\n".join(lines)
