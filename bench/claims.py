"""Every claim's experiment and its verdict on this machine: `python -m bench.claims [--runs 2]` ->
bench/RESULTS-claims.md.

The same experiments as the Claims tab (and `python -m explorer claim --claim all`), in the issue's order, with the
workers the app uses, `--runs` times in a row (default 2): a verdict that rests on a comparison must come out the
same kind each time, and the file records every run and whether they agreed. `--quick` runs the smallest version
of the first, once."""

from __future__ import annotations

import math
import time
from dataclasses import replace

from bench.common import parser
from explorer.api import workers as api_workers
from explorer.claims.board import CLAIMS
from explorer.claims.evidence import ClaimResult, duration, run_claim
from explorer.core import machine


def _section(number: int, r: ClaimResult) -> list[str]:
    c = r.claim
    rows = [f"| {label} | {value} | {detail} |".replace("\n", " ") for label, value, detail in r.evidence.shown]
    return [f"## {number}. “{c.statement}”", "", f"Experiment: {c.experiment} Ran in {duration(r.seconds)}.", "",
            "| figure | value | detail |", "|---|---|---|", *rows, "",
            *[f"- {n}" for n in r.evidence.notes], "", f"**Verdict: {r.verdict.kind.value}**: {r.verdict.why}", ""]


def _overlapping(runs: list[dict[str, float]]) -> str:
    """Of the intervals a claim's numbers hold (`key_low`, `key_high`, as pair_numbers stores them), how many
    overlap in every run, and which do not."""
    keys = [k.removesuffix("_low") for k in runs[0] if k.endswith("_low") and all(f"{k[:-4]}_high" in r for r in runs)]
    bounds = {k: [(r[f"{k}_low"], r[f"{k}_high"]) for r in runs if f"{k}_low" in r] for k in keys}
    kept = {k: b for k, b in bounds.items() if len(b) == len(runs) and not any(math.isnan(x) for p in b for x in p)}
    apart = [k for k, b in kept.items() if max(lo for lo, _ in b) > min(hi for _, hi in b)]
    return f"{len(kept) - len(apart)} of {len(kept)}" + (f" (apart: {', '.join(apart)})" if apart else "")


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-claims.md", runs=2).parse_args(argv)
    runs = 1 if args.quick else args.runs
    machine.keep_off_measure_cores()
    machine.pin_threads()  # as the app and the CLI
    workers = replace(api_workers(), quick=args.quick)
    chosen = ["shape"] if args.quick else list(CLAIMS)
    started = time.monotonic()
    sections: list[str] = []
    kinds: dict[str, list[str]] = {c: [] for c in chosen}
    numbers: dict[str, list[dict[str, float]]] = {c: [] for c in chosen}
    try:
        for run in range(1, runs + 1):
            sections += [f"# Run {run} of {runs}", ""]
            for claim_id in chosen:
                *_, result = run_claim(CLAIMS[claim_id], workers)
                assert isinstance(result, ClaimResult)
                sections += _section(list(CLAIMS).index(claim_id) + 1, result)
                kinds[claim_id].append(result.verdict.kind.value)
                numbers[claim_id].append(result.evidence.numbers)
                print(run, claim_id, result.verdict.kind.value, flush=True)
    finally:
        workers.stop()
    m = machine.describe()
    lines = ["# What people say about dynamic graphs, measured", "",
             f"Measured by `python -m bench.claims{' --quick' if args.quick else ''}` on {m['device']} ({m['cpu']}, "
             f"{m['cores']} cores), {m['threads']} thread(s) per measurement, torch {m['torch']}, "
             f"{time.strftime('%Y-%m-%d')}, in {time.monotonic() - started:.0f} s, {runs} run(s) of each "
             "experiment in a row (the inductor caches as this machine had them: a compile may have been served by "
             "them, as it is said where it matters).", "",
             "| claim | verdict per run | the same each run | intervals that overlap in every run |",
             "|---|---|---|---|",
             *[f"| {c} | {' / '.join(k)} | {'yes' if len(set(k)) == 1 else 'NO'} | {_overlapping(numbers[c])} |"
               for c, k in kinds.items()], "",
             *sections]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
