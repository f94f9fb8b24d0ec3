"""Per-token generation latency by cache kind, eager and compiled, against the position: `python -m bench.generate`.

The decoder at its default config, a 32-byte prompt and 224 generated tokens (positions 33 to 256), greedy. Per
cache kind, one GenerateJob (explorer/labs/generate/job.py) as the lab runs it, here in this process: the compiled
side's first generation logs its compiles (inductor), then REPEATS warm generations of each side, interleaved on
one measuring core and timed step by step. Writes bench/RESULTS-generate.md: per cache kind and side, the decode
step's median over the warm runs at positions 33, 64, 128 and 256, the compiles and the seconds they took, the
per-token comparison (its interval over the paired decode steps) and the break-even in generated tokens."""

from __future__ import annotations

import statistics
import time

from bench.common import parser
from explorer.compile.protocol import WorkerContext
from explorer.core import machine
from explorer.eager.generation import left_padded
from explorer.labs.generate.job import CacheRun, GenerateJob
from explorer.labs.generate.results import GenerateResult
from models.decoder import CACHES

PROMPT = b"The cat sat on the mat, and then"  # 32 bytes
TOKENS = 225  # the last step reads 256 positions
REPEATS = 5
AT = (33, 64, 128, 256)  # positions read off: decode step i reads the prompt and i generated tokens


def _at(samples: list[list[float]], position: int) -> str:
    step = position - len(PROMPT)
    return f"{statistics.median(r[step] for r in samples) * 1e3:.3f}" if 0 < step < len(samples[0]) else "—"


def main() -> None:
    args = parser(__doc__, "RESULTS-generate.md").parse_args()
    tokens, repeats, backend = (6, 1, "eager") if args.quick else (TOKENS, REPEATS, "inductor")
    ids, pads = left_padded([PROMPT])
    runs: list[CacheRun] = []
    for cache in ("none", "static") if args.quick else CACHES:
        job = GenerateJob("decoder", {}, ids.tolist(), pads.tolist(), tokens, cache, backend, repeats)
        runs.append(job.run(WorkerContext(lambda phase: print(phase, flush=True))))
    result = GenerateResult("decoder", {}, [PROMPT.decode()], pads.tolist(), tokens, repeats, runs)
    m = machine.describe()
    rows = []
    for run in runs:
        c = result.per_token(run)
        k = result.break_even(run)
        compiles = (f"{len(run.compiles)} at steps {[x.step for x in run.compiles]}, "
                    f"{sum(x.seconds for x in run.compiles):.1f} s")
        for side, samples in (("eager", run.eager_s), (f"compiled ({backend})", run.compiled_s)):
            if not samples:
                continue
            compiled = side != "eager"
            rows.append(f"| {run.cache} | {side} | " + " | ".join(_at(samples, p) for p in AT)
                        + f" | {compiles if compiled else '—'} | {c.said() if compiled and c else run.error or '—'} | "
                        f"{(f'{k} tokens' if k is not None else 'none') if compiled else '—'} | "
                        f"{run.stance if compiled and run.stance else '—'} |")
    same = ", ".join(f"{r.cache}: {'same' if result.agreement(r)[0] else 'OTHER'} tokens, logits within "
                     f"{result.agreement(r)[1]:.1g}" for r in runs[1:])
    lines = ["# Generation: per-token latency by cache kind, eager and compiled", "",
             f"Measured by `python -m bench.generate{' --quick' if args.quick else ''}` on {m['device']} "
             f"({m['cpu']}, {m['cores']} cores), torch {m['torch']}, {runs[0].threads} thread(s), measuring core "
             f"{list(runs[0].cores)}, {time.strftime('%Y-%m-%d')}. The decoder at its default config, the prompt "
             f"{PROMPT.decode()!r} ({len(PROMPT)} bytes) and {tokens} generated tokens, greedy; per cache kind the "
             f"compiled side's first generation compiles, then {repeats} warm generations of each side, interleaved, "
             "timed step by step. Each figure: the decode step's median over the warm runs, in ms, at the position "
             "it reads. Against the `none` cache's tokens: " + same + ".", "",
             "| cache | side | " + " | ".join(f"ms at {p}" for p in AT)
             + " | compiles | compiled vs eager per token (decode steps paired) | pays off after | recompiles |",
             "|---|---|" + "---:|" * len(AT) + "---|---|---|---|", *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
