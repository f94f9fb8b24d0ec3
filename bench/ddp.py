"""Step time, waiting and failures per multi-process scenario: `python -m bench.ddp` -> bench/RESULTS-ddp.md.

Every scenario on each model it takes (default architecture), at every world size from 2 to the cores this
machine has, through the distributed worker exactly as the app and `python -m explorer ddp` run it: fresh
processes per run, gloo on loopback, one core and one thread per rank."""

from __future__ import annotations

import time

from bench.common import parser
from explorer.core import machine
from explorer.labs.ddp.job import ddp_service
from explorer.labs.ddp.lab import ddp_setup, run_ddp
from explorer.labs.ddp.registry import SCENARIOS
from explorer.labs.ddp.results import DdpResult
from explorer.labs.ddp.world import max_world_size
from models import make_config

STEPS = {"stragglers": 10}  # more steps where the figure is a spread over steps


def _runs(quick: bool) -> list[tuple[str, str, str]]:
    if quick:
        return [("stragglers", "transformer", "aot_eager")]
    out = [(s.name, m, "inductor") for s in SCENARIOS.values() for m in s.models]
    return out + [("compiled", m, "aot_eager") for m in SCENARIOS["compiled"].models]


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-ddp.md").parse_args(argv)
    machine.keep_off_measure_cores()  # as the app: the worker and its ranks start from here
    sections = []
    started = time.monotonic()
    service = ddp_service()
    try:
        for world in range(2, max_world_size() + 1):
            for scenario, model, backend in _runs(args.quick):
                config = make_config(model, {"layers": 1, "width": 32} if args.quick else {})
                setup = ddp_setup(scenario, model, config, world, 2 if args.quick else STEPS.get(scenario, 6), backend)
                *_, result = run_ddp(service, scenario, setup)
                assert isinstance(result, DdpResult)
                print(scenario, model, world, "done", flush=True)
                label = f"{scenario} on {model}, {world} processes" + (f", {backend}" if scenario == "compiled" else "")
                sections += [f"## {label}", "", *[f"- run {i + 1}, {run.label} ({run.wall_s:.1f} s): {run.ending()}"
                                                   for i, run in enumerate(result.runs)], "",
                             "| what | median ms | IQR ms | samples | note |", "|---|---:|---|---:|---|",
                             *[f"| {c.what} | {c.median_ms:.1f} | {c.q1_ms:.1f}-{c.q3_ms:.1f} | {c.samples} | "
                               f"{c.note} |" for c in result.costs], "", f"**Verdict**: {result.verdict}", ""]
    finally:
        service.stop()
    m = machine.describe()
    lines = ["# Dynamic graphs under DistributedDataParallel", "",
             f"Measured by `python -m bench.ddp` on {m['device']} ({m['cpu']}, {m['cores']} cores), torch "
             f"{m['torch']}, {time.strftime('%Y-%m-%d')}, in {time.monotonic() - started:.0f} s. Each scenario "
             "through the distributed worker as the app runs it: every run a fresh start of the processes "
             "(torch.multiprocessing, spawn), torch.distributed over gloo on loopback, one core and one thread per "
             "rank. Step times are the slowest rank's per step (ranks wait for each other in the all-reduce); "
             "spreads are quartiles over steps (or over rank-steps for waits). The first step is a warm-up where "
             "a scenario says so. Timings on this shared 2-core VM are noisy: read ratios within one section.", "",
             *sections]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
