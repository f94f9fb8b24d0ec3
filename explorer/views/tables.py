"""The report as text tables: what `python -m explorer inspect` and `batch` print without --json."""

from __future__ import annotations

from typing import Any

from explorer.core.fmt import format_bytes, format_flops, ms_iqr


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
        ("forward", f"{ms_iqr(fw['median_ms'], fw['iqr_ms'], 3)}, median of {fw['runs']} runs"),
        ("train step", f"{ms_iqr(tr['median_ms'], tr['iqr_ms'], 3)}, median of {tr['runs']} runs"),
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
                     + (f": {ms_iqr(fw['median_ms'], fw['iqr_ms'], 3)}" if fw else ""))
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


def format_lab(report: dict[str, Any]) -> str:
    """The batching lab's report as a table, one row per strategy (`batch` without --json)."""
    m = report["machine"]
    lengths = report["lengths"]
    lines = [f"{report['sentences']} sentences, {report['tokens']} tokens, lengths {min(lengths)}..{max(lengths)}; "
             f"{report['model']}; measured on {m['device']} ({m['cpu']}), {m['threads']} thread(s), torch {m['torch']}",
             f"{'strategy':<30} {'forward':>22} {'train step':>22} {'tok/s':>9} {'pad':>5} {'GFLOP':>7} "
             f"{'useful':>7} {'peak':>10} {'shapes':>6} {'max|diff|':>9}"]
    for s in report["strategies"]:
        if not s["supported"]:
            lines.append(f"{s['title']:<30} not supported: {s['note']}")
            continue
        lines.append(
            f"{s['title']:<30} {ms_iqr(s['forward_ms'], s['forward_iqr_ms']):>22} "
            f"{ms_iqr(s['train_step_ms'], s['train_step_iqr_ms']):>22} {s['tokens_per_s']:>9,.0f} "
            f"{s['padding_fraction']:>5.0%} {format_flops(s):>15} "
            f"{format_bytes(s['peak_bytes']):>10} {s['distinct_shapes']:>6} {s['max_abs_diff']:>9.1e}"
            + ("" if s["agrees"] else "  DISAGREES with the loop") + (f"  ({s['note']})" if s["note"] else ""))
        c = s["compiled"]
        if c is not None:
            status = c["error"] or c["fallback"]
            lines.append(f"{'  compiled (' + c['backend'] + ')':<30} "
                         + (f"NOT COMPILED: {status}" if status else
                            f"{ms_iqr(c['forward_ms'], c['forward_iqr_ms']):>22} "
                            f"{ms_iqr(c['train_step_ms'], c['train_step_iqr_ms']):>22} "
                            f"speed-up {c['speedup']:.2f}x, {c['compiles']} compiles in "
                            f"{c['compile_s'] + c['train_compile_s']:.1f} s")
                         + "".join(f"\n{'':<32}graph break: {b}" for b in c["graph_breaks"]))
    lines.append(f"verdict: {report['verdict']}".replace("**", ""))
    return "\n".join(lines)


def format_deploy(report: dict[str, Any]) -> str:
    """The deployment lab's report as text, one block per route (`deploy` without --json)."""
    m = report["machine"]
    lines = [f"{report['model']} {report['config']}, {report['tokens']} tokens; measured on {m['device']} "
             f"({m['cpu']}), {m['threads']} thread(s), torch {m['torch']}"]
    for r in report["routes"]:
        size = format_bytes(r["artefact_bytes"]) if r["artefact_bytes"] else "no artefact"
        speed = (f"{r['latency']['median_ms']:.3f} ms vs eager {r['eager']['median_ms']:.3f} ms "
                 f"({r['speedup']:.2f}x)" if r["speedup"] else "not timed")
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


def format_debug(report: dict[str, Any]) -> str:
    """The debugging lab's report as text (`debug` without --json)."""
    m = report["machine"]
    lines = [f"{report['model']}, {report['tokens']} tokens, bug {report['bug']}: {report['bug_what']}; "
             f"{m['device']} ({m['cpu']}), {m['threads']} thread(s), torch {m['torch']}"]
    for mode in report["modes"]:
        f = mode["failure"]
        if f is None:
            lines.append(f"{mode['mode']:<22} no error   loss {mode['loss']:.3g}, gradients "
                         f"{'finite' if mode['grad_finite'] else 'NOT finite'}")
            continue
        lines.append(f"{mode['mode']:<22} FAILS after {mode['seconds']:.2f} s: {f['exception']}: {f['message']}")
        lines.append(f"{'':<23}names {f['where'] or 'none of your lines'} {f['source']}; traceback "
                     f"{f['frames']} frames, {f['lines']} lines")
    for n in report["nan"]:
        lines.append(f"NaN by {n['method']:<15} {n['found']} {n['where']}  ({n['seconds']:.3f} s, "
                     f"{n['cost']:.1f}x a plain step)")
    for c in report["comparison"]:
        lines.append(f"vs un-bugged, {c['tokens']:>4} tokens: " + (f"raised {c['error']}" if c["error"] else
                                                                  f"max |diff| {c['max_abs_diff']:.3g}"))
    for r in report["inspection"]:
        lines.append(f"hook on {r['module']}, {r['mode']}: {len(r['norms'])} values, {r['graphs']} graph(s), "
                     f"{len(r['graph_breaks'])} graph break(s)")
    lines.append(f"verdict: {report['verdict']}")
    return "\n".join(lines)


def format_ddp(report: dict[str, Any]) -> str:
    """The multi-process lab's report as text (`ddp` without --json)."""
    m = report["machine"]
    lines = [f"{report['scenario']} on {report['model']} {report['config']}, {report['world_size']} processes "
             f"(gloo, loopback, one core and thread each); {m['device']} ({m['cpu']}), torch {m['torch']}"]
    for i, (run, ending) in enumerate(zip(report["runs"], report["endings"], strict=True)):
        lines.append(f"run {i + 1}: {run['label']} ({run['wall_s']:.1f} s)")
        lines.append(f"{'':<4}{ending}")
    for c in report["costs"]:
        spread = "" if c["samples"] == 1 else f" (IQR {c['q1_ms']:.1f}-{c['q3_ms']:.1f}, {c['samples']} samples)"
        lines.append(f"{c['what']}: {c['median_ms']:.1f} ms{spread}" + (f"  [{c['note']}]" if c["note"] else ""))
    lines.append(f"verdict: {report['verdict']}".replace("**", ""))
    return "\n".join(lines)


def format_claim(report: dict[str, Any]) -> str:
    """A claim's report as text (`claim` without --json)."""
    m = report["machine"]
    lines = [f"“{report['statement']}”", f"experiment: {report['experiment']}",
             f"measured in {report['seconds']:.1f} s on {m['device']} ({m['cpu']}), {m['threads']} thread(s), "
             f"torch {m['torch']}"]
    lines += [f"  {label}: {value}" + (f"  ({detail})" if detail else "") for label, value, detail in report["shown"]]
    lines += [f"  note: {n}" for n in report["notes"]]
    lines.append(f"verdict: {report['verdict']}: {report['why']}")
    return "\n".join(lines)
