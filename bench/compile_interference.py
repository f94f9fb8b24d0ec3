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


def _while_compiling(service: CompileService, samples: int, every_core: bool, lengths: list[int]) -> list[float]:
    """Reference timings taken while the worker compiles the transformer at new lengths (each a cache miss)."""
    done = threading.Event()

    def compile_all() -> None:
        try:
            for n in lengths:
                options = CompileOptions("inductor", "false")  # static: every length a new graph to compile
                for _ in CompileTrack(f"interference-{n}").run(service, "transformer",
                                                                config_dict(make_config("transformer")),
                                                                "transformer", options, [encode(sentence(n, n))]):
                    if every_core and service.pid:
                        os.sched_setaffinity(service.pid, os.sched_getaffinity(0) | machine.MEASURE_CORES)
        finally:
            done.set()

    worker = threading.Thread(target=compile_all, daemon=True)
    worker.start()
    time.sleep(3.0)  # the worker is past its start-up and compiling
    out = []
    while not done.is_set() and len(out) < samples:
        out += _reference_ms(1)
    worker.join()
    return out


def main() -> None:
    args = parser(__doc__, "RESULTS-interference.md").parse_args()
    samples = 3 if args.quick else 15
    lengths = [11, 13] if args.quick else [21, 23, 25, 27, 29, 31, 33, 35]
    machine.keep_off_measure_cores()  # as the app does at start-up: the worker inherits it
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        service = CompileService(timeout_s=600)
        try:
            alone = _reference_ms(samples)
            kept_apart = _while_compiling(service, samples, every_core=False, lengths=lengths)
            service.stop()
            shared = _while_compiling(service, samples, every_core=True, lengths=[n + 100 for n in lengths])
        finally:
            service.stop()
    base = statistics.median(alone)
    for what, xs in (("alone", alone), ("while compiling, worker kept off the measuring core", kept_apart),
                     ("while compiling, worker on every core (no separation)", shared)):
        rows.append(f"| {what} | {len(xs)} | {statistics.median(xs):.3f} | {min(xs):.3f}-{max(xs):.3f} | "
                    f"{statistics.median(xs) / base:.2f}x |")
    m = machine.describe()
    lines = ["# A compile next to a timing", "",
             f"Measured by `python -m bench.compile_interference` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} measurement thread(s), measuring core(s) {m['measure_cores']}, torch {m['torch']}, "
             f"{time.strftime('%Y-%m-%d')}. Reference: the eager forward of `{REFERENCE[0]}` on a "
             f"{len(REFERENCE[1].encode())}-token sentence, each sample a Playground timing (median of its blocks, "
             f"{FORWARD_BUDGET_S} s budget). The compile: inductor, empty cache, the transformer at "
             f"{len(lengths)} new lengths with dynamic=false (each a full compile, C++ compiler included).", "",
             "| reference timing | samples | median ms | min-max ms | vs alone |", "|---|---:|---:|---:|---:|", *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
