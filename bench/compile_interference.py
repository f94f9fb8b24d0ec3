"""Does a compile bend an eager timing? `python -m bench.compile_interference` -> bench/RESULTS-interference.md.

In one run: a reference eager timing (the Playground's, same budget) alone; then while the compile worker
compiles (inductor, an empty cache, so it keeps compiling for a while) with the app's core separation (the
worker off the measuring core); then again with the worker allowed on every core, as without the separation."""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time

from bench.common import parser
from explorer.compile.options import CompileOptions
from explorer.compile.track import CompileTrack
from explorer.compile.worker import CompileService
from explorer.core import machine
from explorer.core.limits import FORWARD_BUDGET_S
from explorer.eager.capture import forward
from explorer.eager.timing import measure
from explorer.lab.batches import sentence
from models import build_model, make_config
from models.config import config_dict
from models.tokenizer import encode, to_ids

REFERENCE = ("rnn", "The reference sentence, timed alone and while a compile runs.")


def _reference_ms(samples: int) -> list[float]:
    model = build_model(REFERENCE[0], make_config(REFERENCE[0]))
    ids = to_ids(REFERENCE[1])
    return [measure("reference", lambda: forward(model, ids), FORWARD_BUDGET_S).median_ms for _ in range(samples)]


def _rounds(service: CompileService, lengths: list[int], every_core: bool,
            backend: str) -> tuple[list[float], list[float]]:
    """Per length: one reference timing while the worker compiles the transformer there (a cache miss), then one
    right after it finished (alone): interleaved, so that drift in the machine's speed hits both alike."""
    during, alone = [], []
    for n in lengths:
        done = threading.Event()

        def compile_one(n: int = n, done: threading.Event = done) -> None:
            try:
                options = CompileOptions(backend, "false")  # static: every length a new graph to compile
                for _ in CompileTrack(f"interference-{n}").run(service, "transformer",
                                                                config_dict(make_config("transformer")),
                                                                "transformer", options, [encode(sentence(n, n))]):
                    if every_core and service.pid:  # as if there were no separation
                        os.sched_setaffinity(service.pid, os.sched_getaffinity(0) | machine.MEASURE_CORES)
            finally:
                done.set()

        worker = threading.Thread(target=compile_one, daemon=True)
        worker.start()
        done.wait(2.5)  # the worker is compiling (C++ code generation and the compiler)
        during += _reference_ms(1)  # (with a quick backend the compile may be over: the quick run checks code only)
        worker.join()
        alone += _reference_ms(1)
    return during, alone


def main() -> None:
    args = parser(__doc__, "RESULTS-interference.md").parse_args()
    lengths = [11, 13] if args.quick else list(range(21, 45, 2))
    backend = "eager" if args.quick else "inductor"
    machine.keep_off_measure_cores()  # as the app does at start-up: the worker inherits it
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        service = CompileService(timeout_s=600)
        try:
            kept_apart, alone_a = _rounds(service, lengths, every_core=False, backend=backend)
            service.stop()
            shared, alone_b = _rounds(service, [n + 100 for n in lengths], every_core=True, backend=backend)
        finally:
            service.stop()
    for what, xs, base in (("alone (between the kept-apart compiles)", alone_a, alone_a),
                           ("while compiling, worker kept off the measuring core", kept_apart, alone_a),
                           ("alone (between the unseparated compiles)", alone_b, alone_b),
                           ("while compiling, worker on every core (no separation)", shared, alone_b)):
        rows.append(f"| {what} | {len(xs)} | {statistics.median(xs):.3f} | {min(xs):.3f}-{max(xs):.3f} | "
                    f"{statistics.median(xs) / statistics.median(base):.2f}x | {min(xs) / min(base):.2f}x |")
    m = machine.describe()
    lines = ["# A compile next to a timing", "",
             f"Measured by `python -m bench.compile_interference` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} measurement thread(s), measuring core(s) {m['measure_cores']}, torch {m['torch']}, "
             f"{time.strftime('%Y-%m-%d')}. Reference: the eager forward of `{REFERENCE[0]}` on a "
             f"{len(REFERENCE[1].encode())}-token sentence, each sample a Playground timing (median of its blocks, "
             f"{FORWARD_BUDGET_S} s budget). The compile: {backend}, empty cache, the transformer at "
             f"{len(lengths)} new lengths with dynamic=false (each a full compile, C++ compiler included).", "",
             "Each round: one sample while a compile runs, one right after it (alone).", "",
             "| reference timing | samples | median ms | min-max ms | median vs alone | best vs alone |",
             "|---|---:|---:|---:|---:|---:|", *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
