"""Where the time went, as the Playground and the CLI show it: the graph coloured by each node's time, the ten
costliest nodes, the same rolled up per module and per line of the model's Python, and the sums set against the
step and the inference forward timed without the profiler (the pass's own and the cards'), the difference said."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from explorer.core.fmt import count, format_bytes
from explorer.core.paths import sanitize
from explorer.eager.costs import Costs
from explorer.eager.graph import AutogradGraph
from explorer.eager.lines import LinesRan
from explorer.views.tables import format_rows

TOP = 10
NODE_COLUMNS = ["node", "operation", "module", "line", "forward µs", "backward µs", "share", "allocated",
                "inference µs"]
ROLLUP_COLUMNS = ["where", "nodes", "forward ms", "backward ms", "share", "inference ms"]
LINE_COLUMNS = [*ROLLUP_COLUMNS, "no node ms"]  # a line's forward operators of no node (a layer the loss never reaches)


@dataclass(frozen=True)
class CardTimes:
    """The cards' medians of the same input, timed apart: what the nodes' sums are set against."""

    forward_ms: float  # an inference forward
    step_ms: float  # a train step


def _share(us: float, total_us: float) -> str:
    return f"{100 * us / total_us:.1f}%" if total_us else "—"


def top_rows(costs: Costs, graph: AutogradGraph, lines: LinesRan) -> list[list[Any]]:
    total = sum(c.total_us for c in costs.nodes.values())
    ranked = sorted(costs.nodes.items(), key=lambda kv: -kv[1].total_us)[:TOP]
    return [[nid, graph.node(nid).op, graph.node(nid).module, sanitize(lines.line_of(nid)) or "—",
             round(c.forward_us, 1), round(c.backward_us, 1), _share(c.total_us, total), format_bytes(c.bytes),
             round(c.inference_us, 1)] for nid, c in ranked]


def _rollup(costs: Costs, key: dict[int, str], no_node_ms: dict[str, float] | None = None) -> list[list[Any]]:
    """Rows by `key` of each node (and, with `no_node_ms`, its time of no node by the same key, a last column)."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for nid, c in costs.nodes.items():
        s = sums[key.get(nid, "—")]
        s[0] += 1
        s[1] += c.forward_us
        s[2] += c.backward_us
        s[3] += c.inference_us
    for k, ms in (no_node_ms or {}).items():
        sums[k][4] += ms * 1e3
    total = sum(f + b for _, f, b, _, _ in sums.values())
    return [[sanitize(k), int(n), round(f / 1e3, 3), round(b / 1e3, 3), _share(f + b, total), round(i / 1e3, 3),
             *([round(o / 1e3, 3)] if no_node_ms is not None else [])]
            for k, (n, f, b, i, o) in sorted(sums.items(), key=lambda kv: -(kv[1][1] + kv[1][2] + kv[1][4]))]


def module_rows(costs: Costs, graph: AutogradGraph) -> list[list[Any]]:
    return _rollup(costs, {n.id: n.module for n in graph.nodes})


PARAMETERS = "the parameters"  # their nodes' row of the lines' table: no line makes a parameter's node


def line_rows(costs: Costs, lines: LinesRan) -> list[list[Any]]:
    """Per line of the model's Python: its nodes, and its forward operators of no node (LINE_COLUMNS)."""
    return _rollup(costs, {nid: PARAMETERS if nid in costs.params else lines.line_of(nid) for nid in costs.nodes},
                   costs.other_lines)


def costs_summary(costs: Costs, card: CardTimes | None) -> str:
    """What was measured, the sums, and how they stand against the cards (a number behind every sentence)."""
    fwd, bwd = costs.nodes_ms()
    at_lines = sum(costs.other_lines.values())
    other, other_fwd, zero, after, plain, plain_fwd, wall = (statistics.mean(x) for x in (
        costs.other_ops_ms, costs.other_forward_ops_ms, costs.zero_grad_ms, costs.outside_ms, costs.plain_ms,
        costs.plain_forward_ms, costs.step_ms))
    together = fwd + bwd + other + after + (0 if costs.params else zero)  # (zero_grad in the parameters' nodes)
    params = (f"; of which the {count(len(costs.params), 'parameter')}' nodes "
              f"{sum(costs.nodes[n].backward_us for n in costs.params) / 1e3:.2f} ms: each one's gradient accumulated, "
              f"and zero_grad's {zero:.2f} ms resetting them, an equal share each") if costs.params else ""
    said = [f"The train step profiled in a pass of its own ({count(costs.repeats, 'repeat')}, after the timings, "
            f"{time.time() - costs.measured_at:.0f} s ago, on a measuring core): each node's figure is its operators' "
            "self time and the Python that issued them, the profiler's cost taken off in proportion (the step took "
            f"{plain:.2f} ms without the profiler in this pass, {wall:.2f} ms with it, min-max "
            f"{min(costs.step_ms):.2f}-{max(costs.step_ms):.2f}: every profiled time x{costs.scale:.2f}), the mean "
            f"over the repeats. The graph's {count(len(costs.nodes), 'node')}: **{fwd + bwd:.2f} ms** "
            f"(forward {fwd:.2f} ms, backward {bwd:.2f} ms{params}); operators of no node (an index, a mask, a "
            f"layer the loss never reaches) {other:.2f} ms;{'' if costs.params else f' zero_grad {zero:.2f} ms;'} "
            f"after the last operator {after:.2f} ms: together {together:.2f} ms of the step's {plain:.2f} ms. "
            f"The nodes' forward is "
            f"{100 * fwd / plain_fwd:.0f}% of the step's forward and loss timed in this pass ({plain_fwd:.2f} ms, "
            f"recording the graph; the card's forward times an inference forward, which records none), "
            f"{100 * (fwd + other_fwd) / plain_fwd:.0f}% with the forward's operators of no node ({other_fwd:.2f} ms: "
            f"{at_lines:.2f} ms at the model's lines, the per-line table's last column, {other_fwd - at_lines:.2f} ms "
            "outside the model's files)."]
    inference = costs.nodes_inference_ms()
    other_inf, after_inf, plain_inf, wall_inf = (statistics.mean(x) for x in (
        costs.other_inference_ms, costs.inference_outside_ms, costs.plain_inference_ms, costs.inference_ms))
    matched, tops = costs.matched_ops
    said.append(f"The inference forward (no graph recorded, as the card's forward runs) profiled the same way, "
                f"{plain_inf:.2f} ms without the profiler, {wall_inf:.2f} ms with it (x{costs.inference_scale:.2f}): "
                f"{matched} of its {tops} top-level operators matched in order to the train step's forward's, each "
                f"one's time shared among the nodes as its counterpart's was: the nodes **{inference:.2f} ms**, "
                f"operators of no node or matched to none {other_inf:.2f} ms, after the last operator "
                f"{after_inf:.2f} ms.")
    if card and card.step_ms > 0 and card.forward_ms > 0:  # (a timing that measured nothing sets nothing against)
        said.append(f"The cards, timed apart: the train step {card.step_ms:.2f} ms, the nodes' sum "
                    f"{100 * (fwd + bwd) / card.step_ms:.0f}% of it; the forward {card.forward_ms:.2f} ms, the nodes' "
                    f"inference sum {100 * inference / card.forward_ms:.0f}% of it.")
    if not costs.matches_graph:
        said.append("This pass drew a different graph from the one shown (the model draws differently each run): "
                    "its nodes are its own.")
    return " ".join(said)


def costs_report(costs: Costs, graph: AutogradGraph, lines: LinesRan) -> dict[str, Any]:
    """The report's `costs` (JSON)."""
    return {"repeats": costs.repeats, "matches_graph": costs.matches_graph,
            "forward_ops_ms": list(costs.forward_ops_ms), "backward_ops_ms": list(costs.backward_ops_ms),
            "other_ops_ms": list(costs.other_ops_ms),
            "other_forward_ops_ms": list(costs.other_forward_ops_ms), "zero_grad_ms": list(costs.zero_grad_ms),
            "outside_ms": list(costs.outside_ms), "step_ms": list(costs.step_ms), "plain_ms": list(costs.plain_ms),
            "plain_forward_ms": list(costs.plain_forward_ms), "scale": costs.scale,
            "inference_ops_ms": list(costs.inference_ops_ms), "other_inference_ms": list(costs.other_inference_ms),
            "inference_outside_ms": list(costs.inference_outside_ms), "inference_ms": list(costs.inference_ms),
            "plain_inference_ms": list(costs.plain_inference_ms), "inference_scale": costs.inference_scale,
            "matched_ops": list(costs.matched_ops),
            "top": [dict(zip(NODE_COLUMNS, r, strict=True)) for r in top_rows(costs, graph, lines)],
            "modules": [dict(zip(ROLLUP_COLUMNS, r, strict=True)) for r in module_rows(costs, graph)],
            "lines": [dict(zip(LINE_COLUMNS, r, strict=True)) for r in line_rows(costs, lines)]}


def costs_text(costs: Costs, graph: AutogradGraph, lines: LinesRan, card: CardTimes | None) -> str:
    """Where the time went, as the CLI and a notebook print it: the summary, then the costliest nodes, per module
    and per line."""
    return "\n".join([costs_summary(costs, card).replace("**", ""),
                      *(f"\n{title}:\n" + format_rows(columns, rows) for title, columns, rows in (
                          ("costliest nodes", NODE_COLUMNS, top_rows(costs, graph, lines)),
                          ("per module", ROLLUP_COLUMNS, module_rows(costs, graph)),
                          ("per line", LINE_COLUMNS, line_rows(costs, lines))))])
