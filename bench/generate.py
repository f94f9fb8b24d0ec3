"""Per-token generation latency by cache kind, eager and compiled, against the position: `python -m bench.generate`.

The decoder (its three caches with inductor, its static cache in mode="reduce-overhead" too) and GPT-2 from
`transformers` (the library's DynamicCache and StaticCache, inductor) at their default configs, a 32-byte prompt
and 225 generated tokens (positions 33 to 256), greedy. Per row, one GenerateJob (explorer/labs/generate/job.py)
as the lab runs it, here in this process: the compiled side's first generation logs its compiles, then REPEATS
warm generations of each side, interleaved on one measuring core and timed step by step. Writes
bench/RESULTS-generate.md: per row and side, the decode step's median over the warm runs at positions 33, 64, 128
and 256, the compiles and the seconds they took, the per-token comparison (its interval over the paired decode
steps), the break-even in generated tokens, and what reduce-overhead did with CUDA graphs."""

from __future__ import annotations

import statistics
import time

from bench.common import agreement, parser
from explorer.core import machine
from explorer.eager.compare import MIN_PAIRS
from explorer.eager.generation import left_padded
from explorer.labs.generate.job import REDUCE_OVERHEAD, CacheRun, GenerateJob
from explorer.labs.generate.results import GenerateResult
from explorer.workers.protocol import WorkerContext
from models.decoder import CACHES

PROMPT = b"The cat sat on the mat, and then"  # 32 bytes
TOKENS = 225  # the last step reads 256 positions
REPEATS = MIN_PAIRS  # warm generations per side: one eager/compiled pair each
AT = (33, 64, 128, 256)  # positions read off: decode step i reads the prompt and i generated tokens


def _at(samples: list[list[float]], position: int) -> str:
    step = position - len(PROMPT)
    return f"{statistics.median(r[step] for r in samples) * 1e3:.3f}" if 0 < step < len(samples[0]) else "—"


def _runs(quick: bool) -> list[tuple[str, str, str]]:
    """(model, cache, backend) per GenerateJob: the decoder's three caches with inductor, its static cache in
    mode="reduce-overhead", and GPT-2 from `transformers` with the library's own caches."""
    if quick:
        return [("decoder", "none", "eager"), ("decoder", "static", "eager"), ("gpt2", "static", "eager")]
    return [*(("decoder", c, "inductor") for c in CACHES), ("decoder", "static", REDUCE_OVERHEAD),
            ("gpt2", "dynamic", "inductor"), ("gpt2", "static", "inductor")]


def _measured(quick: bool, tokens: int, repeats: int) -> tuple[list[tuple[str, CacheRun]], dict[str, GenerateResult]]:
    """One run of every row: each GenerateJob here in this process, and each model's result."""
    ids, pads = left_padded([PROMPT])
    runs: list[tuple[str, CacheRun]] = []
    for model, cache, backend in _runs(quick):
        job = GenerateJob(model, {}, ids.tolist(), pads.tolist(), tokens, cache, backend, repeats)
        runs.append((model, job.run(WorkerContext(lambda phase: print(phase, flush=True)))))
    results = {model: GenerateResult(model, {}, [PROMPT.decode()], pads.tolist(), tokens, repeats,
                                     [r for m, r in runs if m == model]) for model, _ in runs}
    return runs, results


def _table(runs: list[tuple[str, CacheRun]], results: dict[str, GenerateResult]) -> list[str]:
    rows, said = [], []
    for model, run in runs:
        result = results[model]
        c = result.per_token(run)
        k = result.break_even(run)
        paid = f"{k.said()} tokens, {result.compiled_cache(run)}" if k else "none"
        compiles = (f"{len(run.compiles)} at steps {[x.at for x in run.compiles]}, "
                    f"{sum(x.seconds for x in run.compiles):.1f} s")
        for side, samples in (("eager", run.eager_s), (f"compiled ({run.backend})", run.compiled_s)):
            if not samples:
                continue
            compiled = side != "eager"
            rows.append(f"| {model} | {run.cache} | {side} | " + " | ".join(_at(samples, p) for p in AT)
                        + f" | {compiles if compiled else '—'} | {c.said() if compiled and c else run.error or '—'} | "
                        f"{paid if compiled else '—'} | "
                        f"{run.stance if compiled and run.stance else '—'} |")
        said += filter(None, [result.cuda_graphs(run)])
    same = ", ".join(f"{model} {r.cache} ({r.backend}): {'same' if same else 'OTHER'} tokens, logits within "
                     f"{diff:.1g}" for model, r in runs if r is not results[model].reference
                     for same, diff in [results[model].agreement(r)])
    return [f"Against each model's first row's tokens: {same}.", "",
            "| model | cache | side | " + " | ".join(f"ms at {p}" for p in AT)
            + " | compiles | compiled vs eager per token (a pair per warm generation) | pays off after | recompiles |",
            "|---|---|---|" + "---:|" * len(AT) + "---|---|---|---|", *rows, "", *(f"- {s}." for s in said)]


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-generate.md", runs=2).parse_args(argv)
    tokens, repeats, times = (6, 1, 1) if args.quick else (TOKENS, REPEATS, args.runs)
    measured = [_measured(args.quick, tokens, repeats) for _ in range(times)]
    m = machine.describe()
    first = measured[0][0][0][1]
    def label(model: str, run: CacheRun) -> str:
        return f"{model} {run.cache} ({run.backend})"

    rows = {label(model, run): [results[m].per_token(r) for runs, results in measured for m, r in runs
                                if label(m, r) == label(model, run)] for model, run in measured[0][0] if run.backend}
    lines = ["# Generation: per-token latency by cache kind, eager and compiled", "",
             f"Measured by `python -m bench.generate{' --quick' if args.quick else ''}` on {m['device']} "
             f"({m['cpu']}, {m['cores']} cores), torch {m['torch']}, {first.threads} thread(s), measuring core "
             f"{list(first.cores)}, {time.strftime('%Y-%m-%d')}, {times} run(s) in a row. The decoder and GPT-2 "
             f"(`transformers`, its own caches) at their default configs, the prompt {PROMPT.decode()!r} "
             f"({len(PROMPT)} bytes) and {tokens} generated tokens, greedy; per row the compiled side's first "
             f"generation compiles, then {repeats} warm generations of each side, interleaved, timed step by step. "
             "Each figure: the decode step's median over the warm runs, in ms, at the position it reads; compiled "
             "against eager per token: each warm generation's mean decode step, one pair per generation.", "",
             "## The runs against each other", "", *agreement(rows), ""]
    for i, (runs, results) in enumerate(measured, 1):
        lines += [f"## Run {i} of {times}", "", *_table(runs, results), ""]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
