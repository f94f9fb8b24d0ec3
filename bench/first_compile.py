"""The first compiled view a person waits for: `python -m bench.first_compile` -> bench/RESULTS-first-compile.md.

On an empty inductor cache (a fresh machine), runs the app's start-up warm-up in a compile worker, then opens
new sessions the way people do: each model's default text, typed texts of other lengths, and compiles that
miss every cache, timing each from the request to the compiled figures (compile, timing)."""

from __future__ import annotations

import os
import statistics
import tempfile
import time

from bench.common import parser
from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun, CompileTrack
from explorer.compile.warmup import warm_compile_cache
from explorer.core import machine
from explorer.core.examples import DEFAULT_TEXT
from explorer.workers.process import WorkerProcess
from models import ZOO, make_config
from models.config import config_dict
from models.tokenizer import encode

TYPED = ("A sentence a student typed.", "Another one, somewhat longer than the first, with commas, and more words!")


def first_view(service: WorkerProcess, session: str, model: str, text: str,
               options: CompileOptions) -> tuple[float, CompiledRun]:
    """Seconds from asking for a new session's compiled view to its figures, and the run."""
    track = CompileTrack(session)
    start = time.monotonic()
    run = [r for r in track.run(service, model, config_dict(make_config(model)), model, options, [encode(text)])
           if isinstance(r, CompiledRun)][-1]
    return time.monotonic() - start, run


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-first-compile.md").parse_args(argv)
    models = ["transformer"] if args.quick else list(ZOO)
    backend = "eager" if args.quick else "inductor"
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # a fresh machine: no graph, profile or toolchain cached
        service = WorkerProcess()
        try:
            start = time.monotonic()
            warm = [] if args.quick else warm_compile_cache(service)
            warm_s = time.monotonic() - start
            cases = [(m, "default text", DEFAULT_TEXT, CompileOptions(backend)) for m in models]
            cases += [("transformer", f"typed, {len(t.encode())} tokens", t, CompileOptions(backend)) for t in TYPED]
            cases += [("transformer", "typed, dynamic=false (a cache miss)", TYPED[1] + " x", CompileOptions(
                backend, "false")), ("rnn", "typed (unrolled: a cache miss)", TYPED[0], CompileOptions(backend))]
            for i, (model, what, text, options) in enumerate(c for c in cases if c[0] in models):
                seconds, run = first_view(service, f"person-{i}", model, text, options)
                caches = ", ".join(e.cache or "—" for e in run.events) or "no compile"
                rows.append((model, what, len(text.encode()), seconds, run.compile_s, caches, run.fallback))
                print(rows[-1], flush=True)
        finally:
            service.stop()
    m = machine.describe()
    lines = ["# The first compiled view: start-up warm-up, then new sessions", "",
             f"Measured by `python -m bench.first_compile` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"torch {m['torch']}, backend {backend}, {time.strftime('%Y-%m-%d')}. An empty inductor cache first "
             f"(a fresh machine); the warm-up took {warm_s:.0f} s ({'; '.join(warm) or 'skipped'}). Each row is a new "
             "session's first compiled view: seconds from the request to the figures (compile, eager and "
             "compiled timing), dynamo's own compile seconds, and whether inductor's FX-graph and "
             "AOT-autograd caches served it.", "",
             "| model | input | tokens | first view s | compile s | caches | fallback |",
             "|---|---|---:|---:|---:|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d:.1f} | {e:.2f} | {f} | {g or ''} |" for a, b, c, d, e, f, g in rows]
    hits = [r[3] for r in rows if "miss" not in r[5]]
    misses = [r[4] for r in rows if "miss" in r[5]]
    if hits and misses:
        lines += ["", f"Served by the caches: first view {min(hits):.1f}-{max(hits):.1f} s. A compile that misses "
                  f"them: {statistics.median(misses):.1f} s of compiling (median of {len(misses)})."]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
