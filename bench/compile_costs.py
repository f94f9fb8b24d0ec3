"""What compiling costs, and when it pays: `python -m bench.compile_costs` -> bench/RESULTS-compile.md.

1. Compile time of each model's default config at 16 tokens, per backend: cold (a fresh worker process
   and an empty inductor cache) and warm (a fresh process, the cache from the cold run).
2. Total compile seconds over 10 distinct lengths, per dynamic mode (transformer, inductor).
3. Eager vs compiled forward latency per length (transformer, inductor, dynamic=auto), with the
   break-even number of calls.
Every compile runs in the app's own compile worker (explorer/worker.py).
"""

from __future__ import annotations

import os
import tempfile
import time

from bench.common import parser
from explorer.compile.options import BACKENDS, CompileOptions
from explorer.compile.track import CompileTrack
from explorer.core import machine
from explorer.core.inputs import text_of_length
from explorer.workers.process import WorkerProcess
from models import ZOO, make_config
from models.config import config_dict
from models.tokenizer import encode

TEXT = "The quick brown fox jumps over the lazy dog, again and again. "
NOTE = (
    "Notes: 'cold' uses a fresh, empty `TORCHINDUCTOR_CACHE_DIR`; each row is a new worker process, so its "
    "compile seconds include that process's one-time set-up, and inductor compiles serially there "
    "(`TORCHINDUCTOR_COMPILE_THREADS=1`, as in the app). Dynamo's automatic-dynamic profile lives in the same "
    "directory under the app's job id: section 1 compiled length 16, so in section 2 `dynamic=auto` sees a new "
    "length at its first compile and makes it symbolic at once. Section 3 runs after section 2 with the same "
    "cache, so its compiles hit inductor's FX-graph cache. `dynamic=false` compiles once per length until "
    "dynamo's recompile limit (8), after which the last two lengths silently ran eagerly: the app labels them "
    "as fallbacks."
)
LENGTHS = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192)


def _track_run(svc: WorkerProcess, model: str, options: CompileOptions, lengths, config=None):
    track = CompileTrack(f"bench-{time.monotonic()}")
    tokens = [encode(text_of_length(TEXT, n)) for n in lengths]
    cfg = config_dict(make_config(model)) if config is None else config
    runs = [r for r in track.run(svc, model, cfg, model, options, tokens) if hasattr(r, "length")]
    return track, runs


def _fresh(cache_dir: str) -> WorkerProcess:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir  # the worker process inherits it
    return WorkerProcess(timeout_s=600)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-compile.md").parse_args(argv)
    models, backends = (["transformer"], ["eager"]) if args.quick else (list(ZOO), list(BACKENDS))
    lengths = LENGTHS[:2] if args.quick else LENGTHS
    m = machine.describe()
    lines = ["# Compile costs: cold and warm compiles, recompiles per dynamic mode, eager vs compiled", "",
             f"Measured by `python -m bench.compile_costs` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} measurement thread(s), torch {m['torch']}, {time.strftime('%Y-%m-%d')}. "
             "Compile seconds are dynamo's own `entire_frame_compile_time_s` of each compiled frame.", "",
             "## 1. Compile time at 16 tokens (s): fresh process; cold = empty inductor cache", "",
             "| model | backend | cold s | warm s | graphs |", "|---|---|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as cache:
        for name in models:
            for backend in backends:
                times = []
                for _ in ("cold",) if args.quick else ("cold", "warm"):  # quick: one fresh worker checks the path
                    svc = _fresh(cache)
                    try:
                        track, runs = _track_run(svc, name, CompileOptions(backend), (16,))
                    finally:
                        svc.stop()
                    times.append(runs[0].compile_s)
                warm = f"{times[1]:.2f}" if len(times) > 1 else "—"
                row = f"| {name} | {backend} | {times[0]:.2f} | {warm} | {runs[0].graph_count} |"
                lines.append(row)
                print(row, flush=True)
        shown = ", ".join(map(str, lengths))
        lines += ["", f"## 2. {len(lengths)} distinct lengths {shown} (transformer, {backends[0]}, warm cache)", "",
                  "| dynamic | mark_dynamic | compiles | total compile s | symbolic graphs | fallbacks |",
                  "|---|---|---:|---:|---:|---:|"]
        svc = _fresh(cache)
        try:
            for dynamic, mark in (("auto", False), ("true", False), ("false", False), ("auto", True)):
                track, runs = _track_run(svc, "transformer", CompileOptions(backends[0], dynamic, mark), lengths)
                total = sum(e.event.compile_s for e in track.timeline)
                symbolic = sum(e.event.dynamic for e in track.timeline)
                row = (f"| {dynamic} | {mark} | {len(track.timeline)} | {total:.1f} "
                       f"| {symbolic} | {sum(r.fallback is not None for r in runs)} |")
                lines.append(row)
                print(row, flush=True)
            lines += ["", f"## 3. Eager vs compiled forward per length (transformer, {backends[0]}, dynamic=auto)", "",
                      "| tokens | eager ms (IQR) | compiled ms (IQR) | speed-up | compiled here s | break-even calls |",
                      "|---:|---:|---:|---:|---:|---:|"]
            track, runs = _track_run(svc, "transformer", CompileOptions(backends[0]), lengths)
            for r in runs:
                be = "never" if r.break_even_calls is None else f"{r.break_even_calls:,}"
                row = (f"| {r.length} | {r.eager.median_ms:.3f} ({r.eager.iqr_ms:.3f}) | {r.compiled.median_ms:.3f} "
                       f"({r.compiled.iqr_ms:.3f}) | {r.speedup:.2f}x | {r.compile_s:.2f} | {be} |")
                lines.append(row)
                print(row, flush=True)
        finally:
            svc.stop()
    lines += ["", "Break-even = all compile seconds spent on this model so far / (eager - compiled) per call; "
              "'never' when compiled is not faster.", "", NOTE]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
