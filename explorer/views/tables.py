"""The report as text tables: what `python -m explorer inspect` and `batch` print without --json."""

from __future__ import annotations

import time
from typing import Any

from explorer.core.fmt import format_bytes, ms_iqr
from explorer.core.machine import Machine
from explorer.eager.compare import too_few


def format_rows(columns: list[str], rows: list[list[Any]]) -> str:
    """Rows under their column names, each column as wide as its widest cell (numbers right-aligned)."""
    cells = [columns, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    numeric = [all(isinstance(r[i], int | float) for r in rows) for i in range(len(columns))]
    return "\n".join("  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric, strict=True))
                     .rstrip() for r in cells)


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
        ("measured on", Machine.of(m).line()),
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
            be_low, be_high = c["break_even_range"] or (None, None)
            eager_ms = c["eager_forward"]["median_ms"]
            said = {True: "compiled faster", False: "eager faster", None: "no difference resolved"}[c["faster"]]
            interval = (f"95% interval {c['speedup_interval'][0]:.2f}-{c['speedup_interval'][1]:.2f}x over "
                        f"{c['pairs']} pairs: {said}" if c["speedup_interval"] else too_few(c["pairs"]))
            lines.append(f"  vs eager           {c['speedup']:.2f}x, {interval} (eager re-timed {eager_ms:.3f} ms), "
                         f"compile {c['total_compile_s']:.2f} s ({c['compile_cache']}), break-even "
                         + ("not reached" if be is None else f"{be:,} calls ({be_low:,}-{be_high:,})"))
        if c["fallback"]:
            lines.append(f"  NOT COMPILED: {c['fallback']}")
        lines.append(f"  graphs {c['graph_count']}, " + ("no graph: dynamo skipped the forward" if
                     c["explain_graph_count"] == 0 else f"graph breaks {c['graph_break_count']}"))
        lines += [f"  break at {b['where']} ({b['times']}x): {b['reason']}" for b in c["graph_breaks"]]
        lines.append("timeline:")
        lines += [f"  {e['length']:>5} tokens  {e['compile_id']:<5} {'symbolic' if e['dynamic'] else 'static':<8} "
                  f"{e['compile_s']:6.2f} s  {e['reason']}" for e in report["timeline"]]
    lines += [f"note: {n}" for n in report["notices"]]
    return "\n".join(lines)


def _claim_head(report: dict[str, Any]) -> list[str]:
    return [f"“{report['statement']}”", f"experiment: {report['experiment']}"]


def format_claim(report: dict[str, Any]) -> str:
    """A claim's report as text (`claim` without --json)."""
    lines = [*_claim_head(report), f"measured in {report['seconds']:.1f} s on {Machine.of(report['machine']).line()}"]
    lines += [f"  {label}: {value}" + (f"  ({detail})" if detail else "") for label, value, detail in report["shown"]]
    lines += [f"  note: {n}" for n in report["notes"]]
    lines.append(f"verdict: {report['verdict']}: {report['why']}")
    return "\n".join(lines)


def format_claim_against(here: dict[str, Any], server: dict[str, Any] | None) -> str:
    """A claim's report measured here beside the server's (a lesson step's notebook): each card's value on both
    machines, and both verdicts; `server` None: the notebook carried no result of the server's."""
    if server is None:
        return format_claim(here) + "\n(no result of the server's came with this notebook: nothing to set beside it)"

    def measured(r: dict[str, Any]) -> str:
        quick = " (quick: a reduced experiment, not the claim's evidence)" if r["quick"] else ""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(r["measured_at"]))
        return f"measured at {when} in {r['seconds']:.1f} s on {Machine.of(r['machine']).line()}{quick}"

    theirs = {label: value for label, value, _ in server["shown"]}
    ours = {label: value for label, value, _ in here["shown"]}
    lines = [*_claim_head(here), f"here: {measured(here)}", f"the server: {measured(server)}"]
    lines += [f"  {label}: {ours.get(label, 'not shown')} here; {theirs.get(label, 'not shown')} on the server"
              for label in [*ours, *(x for x in theirs if x not in ours)]]
    lines += [f"  note: {n}" for n in here["notes"]]
    lines += [f"verdict here: {here['verdict']}: {here['why']}",
              f"verdict on the server: {server['verdict']}: {server['why']}"]
    return "\n".join(lines)
