"""What Python's cycle collector costs the app's processes, with and without their start-up objects frozen.

`python -m bench.gc_pause [--runs 7]` starts a fresh interpreter per process kind (a measurement process: the
pool's imports; the server: `import explorer.ui.app`), counts the objects the collector tracks, and times a full
collection, then the memory profile of one run (`measure_peaks`), first as
start-up leaves them and then after `freeze_startup_objects()`. Appends to bench/RESULTS-gc.md.
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing as mp
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

IMPORTS = {"measurement process": ("explorer.workers.process", "explorer.serving.pool"), "server": ("explorer.ui.app",)}
PROFILED = ("rnn", {"cell": "gru", "hidden": 64}, 85)  # model, config, tokens: a typical student's input


def _ms(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(1e3 * (time.perf_counter() - start))
    return out


def probe(modules: tuple[str, ...], runs: int) -> dict:
    """In a fresh process: tracked objects, full-collection and memory-profile times, before and after freezing."""
    import torch

    from explorer.core.machine import freeze_startup_objects, pin_threads
    from explorer.eager.capture import train_loss
    from explorer.eager.memory import measure_peaks, warm_profiler
    from models import build_model, make_config

    for m in modules:
        importlib.import_module(m)
    pin_threads()
    warm_profiler()
    name, config, tokens = PROFILED
    model = build_model(name, make_config(name, config))
    ids = torch.randint(0, 256, (1, tokens))
    out = {"tracked": len(gc.get_objects())}
    for state in ("as started", "frozen"):
        if state == "frozen":
            freeze_startup_objects()
        out[state] = {"collect_ms": _ms(gc.collect, runs),
                      "profile_ms": _ms(lambda: measure_peaks(model, ids, train_loss), runs)}
    return out


def _fmt(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.1f} ms (min {min(xs):.1f}, max {max(xs):.1f})"


def main(argv: list[str] | None = None) -> None:
    from bench.common import parser
    from explorer.core import machine

    p = parser(__doc__, "RESULTS-gc.md")
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args(argv)
    runs = 2 if args.quick else args.runs
    m = machine.describe()
    lines = [f"## Full collections and one memory profile, {runs} runs each ({time.strftime('%Y-%m-%d %H:%M')})", "",
             f"Measured by `python -m bench.gc_pause --runs {runs}` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} thread(s), torch {m['torch']}; the profiled run: {PROFILED[0]} {PROFILED[1]}, "
             f"{PROFILED[2]} tokens.", ""]
    kinds = list(IMPORTS)[:1] if args.quick else list(IMPORTS)  # quick: one fresh interpreter, the same probe
    for kind in kinds:
        modules = IMPORTS[kind]
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:  # a fresh interpreter each
            r = pool.submit(probe, modules, runs).result()
        lines.append(f"- {kind} ({r['tracked']:,} objects tracked after start-up):")
        lines += [f"  - {state}: a full collection {_fmt(r[state]['collect_ms'])}; the memory profile "
                  f"{_fmt(r[state]['profile_ms'])}" for state in ("as started", "frozen")]
    lines.append("")
    header = "# Cycle-collector pauses in the app's processes\n\n" if not args.out.exists() else ""
    with args.out.open("a") as f:
        f.write(header + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
