"""How the profiled per-node times of a train step add up against the card's train step: `python -m bench.costs`
-> bench/RESULTS-costs.md.

For each zoo model at 100 tokens, the Playground's run (its train step timed without the profiler, on the
measuring core) and then the lines-and-costs pass (explorer/eager/costs.py: the step profiled five times, every
operator charged to a graph node by autograd's sequence numbers). Read: the nodes' summed medians, the operators of no
node, the profiled step's wall time, and the card's train step; the ratio of the first to the last is what the
Playground says beside the figure ("the nodes' sum is N% of it")."""

from __future__ import annotations

import statistics

from bench.common import measured_by, parser
from explorer.core import machine
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.runs.session import Session
from explorer.serving.pool import MeasurePool
from explorer.views.playground import update
from models import ZOO

TOKENS = 100


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-costs.md").parse_args(argv)
    machine.keep_off_measure_cores()  # as the app's server threads: the measuring core is the pool's
    machine.pin_threads()  # and as the app's: its torch threads fit the cores it keeps
    pool = MeasurePool()
    pool.start()
    models = list(ZOO)[:1] if args.quick else list(ZOO)
    ratios = []
    out = ["# The profiled nodes against the card's train step", "",
           f"{measured_by('costs', args.quick)}: each zoo model at {TOKENS} tokens, its train step timed by the "
           "Playground's run, then profiled node by node (five repeats, each node's median).", "",
           "| model | nodes | nodes' sum ms | no node ms | profiled step wall ms (min-max) | card's train step ms | "
           "nodes' sum / card |", "|---|---:|---:|---:|---|---:|---:|"]
    try:
        for name in models:
            session = Session()
            list(update(session, name, text_of_length(DEFAULT_TEXT, TOKENS), "", {}, pool))
            costs = session.costs()
            card = session.last.train_step.median_ms
            nodes_ms = sum(c.total_us for c in costs.nodes.values()) / 1e3
            ratios.append(nodes_ms / card)
            out.append(f"| {name} | {len(costs.nodes):,} | {nodes_ms:.2f} | {statistics.median(costs.other_ops_ms):.2f}"
                       f" | {statistics.median(costs.step_ms):.2f} ({min(costs.step_ms):.2f}-{max(costs.step_ms):.2f})"
                       f" | {card:.2f} | {nodes_ms / card:.2f} |")
    finally:
        pool.stop()
    off = sum(abs(r - 1) > 0.1 for r in ratios)
    out += ["", f"The nodes' sum over the card's step ranged {min(ratios):.2f}-{max(ratios):.2f}: {off} of "
            f"{len(ratios)} models outside 10%. The profiled side carries the profiler's cost per operator and runs "
            "on the server's core, the card's on the measuring core without it: read the shares per node, module "
            "and line, not the absolute times."]
    args.out.write_text("\n".join(out) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
