"""Every claim's experiment and its verdict on this machine: `python -m bench.claims` -> bench/RESULTS-claims.md.

The same experiments as the Claims tab (and `python -m explorer claim --claim all`), each once, in the issue's
order, with the workers the app uses; `--quick` runs the smallest version of the first."""

from __future__ import annotations

import time

from bench.common import parser
from explorer.claims.board import CLAIMS
from explorer.claims.evidence import ClaimResult, duration, run_claim
from explorer.compile.protocol import Workers
from explorer.compile.worker import CompileService
from explorer.core import machine
from explorer.labs.ddp.job import ddp_service
from explorer.labs.deploy.job import deploy_service


def _section(number: int, r: ClaimResult) -> list[str]:
    c = r.claim
    rows = [f"| {label} | {value} | {detail} |".replace("\n", " ") for label, value, detail in r.evidence.shown]
    return [f"## {number}. “{c.statement}”", "", f"Experiment: {c.experiment} Ran in {duration(r.seconds)}.", "",
            "| figure | value | detail |", "|---|---|---|", *rows, "",
            *[f"- {n}" for n in r.evidence.notes], "", f"**Verdict: {r.verdict.kind}**: {r.verdict.why}", ""]


def main() -> None:
    args = parser(__doc__, "RESULTS-claims.md").parse_args()
    machine.keep_off_measure_cores()
    machine.pin_threads()  # as the app and the CLI
    workers = Workers(CompileService(), deploy_service(), ddp_service(), quick=args.quick)
    chosen = ["shape"] if args.quick else list(CLAIMS)
    started = time.monotonic()
    sections: list[str] = []
    try:
        for claim_id in chosen:
            *_, result = run_claim(CLAIMS[claim_id], workers)
            assert isinstance(result, ClaimResult)
            sections += _section(list(CLAIMS).index(claim_id) + 1, result)
            print(claim_id, result.verdict.kind, flush=True)
    finally:
        for service in (workers.compile, workers.deploy, workers.ddp):
            service.stop()
    m = machine.describe()
    lines = ["# What people say about dynamic graphs, measured", "",
             f"Measured by `python -m bench.claims{' --quick' if args.quick else ''}` on {m['device']} ({m['cpu']}, "
             f"{m['cores']} cores), {m['threads']} thread(s) per measurement, torch {m['torch']}, "
             f"{time.strftime('%Y-%m-%d')}, in {time.monotonic() - started:.0f} s, one run of each experiment "
             "(the inductor caches as this machine had them: a compile may have been served by them, as it is "
             "said where it matters).", "", *sections]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
