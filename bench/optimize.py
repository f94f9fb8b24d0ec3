"""Every strategy of the optimization lab on each zoo model: `python -m bench.optimize`.

Each model at its default config serves the same stream of 200 requests, their lengths drawn from a Zipf
distribution of 5 to 120 tokens (seed 0), with every strategy, each in a fresh worker process (inductor, the
lab's default time bound), exactly as the lab's tab, `python -m explorer optimize` and `/optimize` run it. Writes
bench/RESULTS-optimize.md: per model the planner's weights and plans, a row per strategy (the time to serve the
stream with its compiles, the warm latency, eager against it request by request, the padded share, the memory,
the answers) and the recommendation with its interval."""

from __future__ import annotations

import time
from dataclasses import replace

from bench.common import agreement, parser
from explorer.core import machine
from explorer.core.workload import workload
from explorer.labs.optimize.lab import run_optimize
from explorer.labs.optimize.results import OptimizeResult
from explorer.labs.optimize.strategies import STRATEGIES
from explorer.labs.optimize.view import PLAN_COLUMNS, STRATEGY_COLUMNS, view_of
from explorer.sources.registry import source
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import Here, Workers
from models import ZOO

N, SHORTEST, LONGEST = 200, 5, 120


def _table(columns: tuple[str, ...], rows: list[list[object]]) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows)]


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-optimize.md", runs=2).parse_args(argv)
    if args.quick:  # the script's path in one process, a tracing backend, three strategies, a short stream
        here = Here()
        workers, models, n, backend, chosen = Workers.on(here), ["transformer"], 8, "eager", \
            ["eager", "auto", "buckets"]
    else:
        probe = WorkerProcess()  # the planner's weights; the strategies each get a fresh one
        workers = replace(Workers.on(probe), fresh=True)
        models, n, backend, chosen = list(ZOO), N, "inductor", None
    times = 1 if args.quick else args.runs
    stream = workload("zipf", n, SHORTEST, LONGEST, seed=0)
    m = machine.describe()
    began = time.monotonic()
    measured: list[dict[str, OptimizeResult]] = []
    for _ in range(times):  # every model in a run, then the next run: a slow spell falls on one run, not one model
        measured.append({})
        for name in models:
            for item in run_optimize(workers, name, source(name).config({}), stream, chosen or list(STRATEGIES),
                                     backend, 300.0):
                if isinstance(item, OptimizeResult):
                    measured[-1][name] = item
                else:
                    print(name, item.phase, flush=True)
    workers.compile.stop()
    steady = {f"{name}: {s.strategy} warm, against eager":
              [r[name].steady(next(x for x in r[name].served if x.strategy == s.strategy)) for r in measured]
              for name in models for s in measured[0][name].served if _served_in_every_run(measured, name, s.strategy)}
    picked = [f"| {name} | " + " / ".join(_picked(r[name]) for r in measured) + " | "
              + ("yes" if len({_picked(r[name]) for r in measured}) == 1 else "NO") + " |" for name in models]
    lines = ["# The optimization lab on each zoo model", "",
             f"Measured by `python -m bench.optimize{' --quick' if args.quick else ''}` on {m['device']} "
             f"({m['cpu']}, {m['cores']} cores), torch {m['torch']}, {time.strftime('%Y-%m-%d')}, in "
             f"{time.monotonic() - began:.0f} s, {times} run(s) in a row: {stream.describe()}, every model at its "
             f"default config, backend {backend}. Each strategy served the whole stream in "
             f"{'a fresh worker process' if workers.fresh else 'this process'}; per request its own seconds and "
             "eager's, timed back to back, which runs first alternating; warm requests compared in blocks of "
             "consecutive requests (a block is a pair); a strategy's compiles are counted where they happened.", "",
             "## The runs against each other", "", "What each run recommends:", "",
             "| model | recommended per run | the same each run |", "|---|---|---|", *picked, "",
             "Each strategy warm (after its last compile) against eager:", "", *agreement(steady), ""]
    for i, results in enumerate(measured, 1):
        lines += [f"# Run {i} of {times}", ""]
        for name, result in results.items():
            view = view_of(result)
            lines += [f"## {name}", "", view.status, "", *_table(STRATEGY_COLUMNS, view.strategies), "",
                      *_table(PLAN_COLUMNS, view.plans), "", f"**Recommendation**: {view.recommendation}", ""]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


def _served_in_every_run(measured: list[dict[str, OptimizeResult]], name: str, strategy: str) -> bool:
    """A strategy every run served, with eager's answers, and that is not eager itself."""
    return strategy != "eager" and all(any(s.strategy == strategy and OptimizeResult.usable(s)
                                           for s in r[name].served) for r in measured)


def _picked(result: OptimizeResult) -> str:
    """What a run recommends: the strategy resolved fastest, or the tied group."""
    best = result.fastest()
    return best.strategy if best else "tied: " + ", ".join(s.strategy for s in result.tied())


if __name__ == "__main__":
    main()
