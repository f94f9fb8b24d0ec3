"""The report of a run: the JSON panel, `inspect --json`, and the API all return this dict.

Its keys are a public interface (documented in the README); add keys, never rename them.
"""

from __future__ import annotations

from typing import Any

from explorer import limits, machine
from explorer.compare import CompiledRun
from explorer.session import RunResult
from models import entry
from models.config import config_dict


def build_report(r: RunResult, timeline: list[dict[str, Any]] | None = None,
                 compiled_runs: list[CompiledRun] | None = None) -> dict[str, Any]:
    c = r.capture
    report: dict[str, Any] = {
        "model": r.model,
        "config": config_dict(r.config),
        "arch": r.arch,
        "run": r.number,
        "text": r.input.text,
        "tokens": r.tokens,
        "truncated": r.input.truncated_from is not None,
        "notices": r.notices,
        "params": r.params,
        "graph": c.graph.summary(),
        "eager": {"forward": r.forward.as_dict(), "train_step": r.train_step.as_dict()},
        "memory": {
            "saved_bytes": c.saved_bytes,
            "param_bytes": r.param_bytes,
            "peak_forward_bytes": r.memory.forward if r.memory else None,
            "peak_grad_forward_bytes": r.memory.grad_forward if r.memory else None,
            "peak_train_bytes": r.memory.train if r.memory else None,
        },
        "trace": c.trace,
        "structure": entry(r.model).structure(c.trace),
        "machine": machine.describe(),
        "limits": limits.describe(),
    }
    if r.diff is not None:
        report["diff"] = r.diff.as_dict()
    if r.compiled is not None:
        report["compiled"] = r.compiled.as_dict()
        report["compiled_by_length"] = [
            {"length": c.length, "eager_ms": c.eager.median_ms if c.eager else None,
             "compiled_ms": c.compiled.median_ms if c.compiled else None, "speedup": c.speedup,
             "compile_s": c.compile_s, "fallback": c.fallback}
            for c in compiled_runs or []
        ]
        report["timeline"] = [
            {k: e[k] for k in ("length", "reason", "dynamic", "compile_s", "compile_id", "frame", "ops", "arch",
                               "options")}
            for e in timeline or []
        ]
    return report


def format_bytes(n: int | None) -> str:
    if n is None:
        return "…"
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def format_table(report: dict[str, Any]) -> str:
    """The report as a readable text table (the CLI without --json)."""
    fw, tr, mem, g = report["eager"]["forward"], report["eager"]["train_step"], report["memory"], report["graph"]
    m = report["machine"]
    rows = [
        ("model", report["arch"]),
        ("tokens", f"{report['tokens']}" + (" (truncated)" if report["truncated"] else "")),
        ("structure", ", ".join(f"{k}: {v}" for k, v in report["structure"].items())),
        ("params", f"{report['params']:,}  ({format_bytes(mem['param_bytes'])})"),
        ("graph", f"{g['nodes']} nodes ({g['op_nodes']} ops, {g['param_leaves']} parameter leaves), "
                  f"{g['edges']} edges"),
        ("forward", f"{fw['median_ms']:.3f} ms median, IQR {fw['iqr_ms']:.3f} ms ({fw['runs']} runs)"),
        ("train step", f"{tr['median_ms']:.3f} ms median, IQR {tr['iqr_ms']:.3f} ms ({tr['runs']} runs)"),
        ("saved for backward", format_bytes(mem["saved_bytes"])),
        ("peak forward", format_bytes(mem["peak_forward_bytes"])),
        ("peak train step", format_bytes(mem["peak_train_bytes"])),
        ("measured on", f"{m['device']} ({m['cpu']}), {m['threads']} thread(s), torch {m['torch']}"),
    ]
    lines = [f"{k:<20} {v}" for k, v in rows]
    lines.append("module calls:")
    lines += [f"  {name:<30} {n}" for name, n in report["trace"].items()]
    if "diff" in report:
        d = report["diff"]
        lines.append(f"diff: {d['label']}: +{d['nodes_added']} / -{d['nodes_removed']} nodes")
        lines += [f"  {x['module']:<30} {x['before']} -> {x['after']}" for x in d["modules"]]
    if "compiled" in report:
        c = report["compiled"]
        fw = c["forward"]
        lines.append(f"compiled             {c['options']['backend']} dynamic={c['options']['dynamic']}"
                     + (f": {fw['median_ms']:.3f} ms median, IQR {fw['iqr_ms']:.3f} ms" if fw else ""))
        if c["speedup"] is not None:
            be = c["break_even_calls"]
            eager_ms = c["eager_forward"]["median_ms"]
            lines.append(f"  vs eager           {c['speedup']:.2f}x (eager re-timed {eager_ms:.3f} ms), "
                         f"compile {c['total_compile_s']:.2f} s, break-even "
                         + ("never" if be is None else f"{be:,} calls"))
        if c["fallback"]:
            lines.append(f"  NOT COMPILED: {c['fallback']}")
        lines.append(f"  graphs {c['graph_count']}, graph breaks {c['graph_break_count']}")
        lines += [f"  break at {b['where']}: {b['reason']}" for b in c["graph_breaks"]]
        lines.append("timeline:")
        lines += [f"  {e['length']:>5} tokens  {e['compile_id']:<5} {'symbolic' if e['dynamic'] else 'static':<8} "
                  f"{e['compile_s']:6.2f} s  {e['reason']}" for e in report["timeline"]]
    lines += [f"note: {n}" for n in report["notices"]]
    return "\n".join(lines)


def format_flops(s: dict[str, Any]) -> str:
    """A lab strategy's FLOPs: 'GFLOP total (useful share)', or why there is no count."""
    if not s["flops_total"]:
        return "not counted"
    return f"{s['flops_total'] / 1e9:.3f} ({s['flops_useful'] / s['flops_total']:.0%})"


def _ms_cell(median: float | None, iqr: float | None) -> str:
    return "-" if median is None else f"{median:.2f}±{iqr:.2f}"


def format_lab(report: dict[str, Any]) -> str:
    """The batching lab's report as a table, one row per strategy (`batch` without --json)."""
    m = report["machine"]
    lengths = report["lengths"]
    lines = [f"{report['sentences']} sentences, {report['tokens']} tokens, lengths {min(lengths)}..{max(lengths)}; "
             f"{report['model']}; measured on {m['device']} ({m['cpu']}), {m['threads']} thread(s), torch {m['torch']}",
             f"{'strategy':<30} {'fwd ms±IQR':>13} {'train ms±IQR':>14} {'tok/s':>9} {'pad':>5} {'GFLOP':>7} "
             f"{'useful':>7} {'peak':>10} {'shapes':>6} {'max|diff|':>9}"]
    for s in report["strategies"]:
        if not s["supported"]:
            lines.append(f"{s['title']:<30} not supported: {s['note']}")
            continue
        lines.append(
            f"{s['title']:<30} {_ms_cell(s['forward_ms'], s['forward_iqr_ms']):>13} "
            f"{_ms_cell(s['train_step_ms'], s['train_step_iqr_ms']):>14} {s['tokens_per_s']:>9,.0f} "
            f"{s['padding_fraction']:>5.0%} {format_flops(s):>15} "
            f"{format_bytes(s['peak_bytes']):>10} {s['distinct_shapes']:>6} {s['max_abs_diff']:>9.1e}"
            + ("" if s["agrees"] else "  DISAGREES with the loop") + (f"  ({s['note']})" if s["note"] else ""))
        c = s["compiled"]
        if c is not None:
            status = c["error"] or c["fallback"]
            lines.append(f"{'  compiled (' + c['backend'] + ')':<30} "
                         + (f"NOT COMPILED: {status}" if status else
                            f"{_ms_cell(c['forward_ms'], c['forward_iqr_ms']):>13} "
                            f"{_ms_cell(c['train_step_ms'], c['train_step_iqr_ms']):>14} "
                            f"speed-up {c['speedup']:.2f}x, {c['compiles']} compiles in "
                            f"{c['compile_s'] + c['train_compile_s']:.1f} s")
                         + "".join(f"\n{'':<32}graph break: {b}" for b in c["graph_breaks"]))
    lines.append(f"verdict: {report['verdict']}".replace("**", ""))
    return "\n".join(lines)
