"""Time of one Playground update alone, per model and input length: `python -m bench.update_latency`.

An update streams, as the UI shows it: (1) the graph and the cards of its counts (capture, layout, figure), then
(2) the timings and the memory peaks, measured in the measurement process on its own core. Each repeat types a
new text (nothing cached); a last row per model opens an input another session ran seconds before (the graph,
counts, timings and memory all shared). Also: what the run plan assumes (explorer/serving/plan.py), measured per
model at 100 tokens: a graph capture and a profiled train step over a plain train step.
Writes bench/RESULTS-update.md (linked from the README). Medians and min/max over REPEATS.
"""

from __future__ import annotations

import itertools
import statistics
import time

from bench.common import parser
from explorer.core import machine
from explorer.eager.capture import capture_run, train_loss, train_step
from explorer.eager.memory import measure_peaks, warm_profiler
from explorer.runs.session import Session
from explorer.serving.pool import MeasurePool
from explorer.views.playground import GraphFirst, View, update
from models import ZOO, build_model, make_config
from models.tokenizer import to_ids

LENGTHS = (10, 100, 500)
REPEATS = 7
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "graphs", "grow", "and",
         "loops", "unroll"]


def _text(n: int, seed: int) -> str:
    """A new text of exactly n bytes for each seed (a cached run would not show the capture's cost)."""
    words = itertools.cycle(WORDS[seed % len(WORDS):] + WORDS[:seed % len(WORDS)])
    out = f"{seed} "
    while len(out) < n:
        out += next(words) + " "
    return out[:n]


def _stats(xs: list[float]) -> str:
    ms = [x * 1e3 for x in xs]
    return f"{statistics.median(ms):.0f} ({min(ms):.0f}-{max(ms):.0f})"


def _update(pool: MeasurePool, name: str, text: str) -> tuple[float, float]:
    """Seconds to the first view (graph and cards) and to the final view (timings and memory)."""
    start = time.perf_counter()
    first = None
    for step in update(Session(name), name, text, "", {}, pool):
        if isinstance(step, GraphFirst) and first is None:
            first = time.perf_counter() - start
    assert isinstance(step, View)
    return first, time.perf_counter() - start


def _ratios(name: str, n: int) -> tuple[float, float, float]:
    """A train step over the capture's own forward time (what `Capture.step_s` bounds), a capture over a train step
    (`plan.CAPTURE_COST`), a profiled train step over a plain one (`plan.PROFILER_COST`); medians of REPEATS."""
    model, ids = build_model(name, make_config(name)), to_ids(_text(n, 0))
    train_step(model, ids)

    def timed(fn) -> float:
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    step = timed(lambda: train_step(model, ids))
    captured = statistics.median(capture_run(model, ids).forward_s for _ in range(REPEATS))
    return (step / captured, timed(lambda: capture_run(model, ids)) / step,
            timed(lambda: measure_peaks(model, ids, train_loss)) / step)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-update.md").parse_args(argv)
    machine.keep_off_measure_cores()  # as the app's server threads: the measuring core is the pool's
    machine.pin_threads()
    warm_profiler()
    pool = MeasurePool()
    pool.start()
    rows, plan_rows = [], []
    seeds = itertools.count()
    try:
        for name in ["rnn"] if args.quick else ZOO:
            for n in (10,) if args.quick else LENGTHS:
                firsts, finals = zip(*(_update(pool, name, _text(n, next(seeds))) for _ in range(REPEATS)),
                                     strict=True)
                rows.append((name, f"{n}", _stats(firsts), _stats(finals)))
            shared = _text(100, next(seeds))
            _update(pool, name, shared)  # another session ran it a moment ago
            firsts, finals = zip(*(_update(pool, name, shared) for _ in range(REPEATS)), strict=True)
            rows.append((name, "100, ran before", _stats(firsts), _stats(finals)))
            plan_rows.append((name, *(f"{x:.2f}" for x in _ratios(name, 10 if args.quick else 100))))
    finally:
        pool.stop()
    d = machine.describe()
    lines = [
        "# One Playground update alone: to the graph and cards, and to the final view", "",
        f"`python -m bench.update_latency`, {time.strftime('%Y-%m-%d %H:%M')}; {d['cpu']}, {d['threads']} thread(s), "
        f"server on cores {d['other_cores']}, timings on core(s) {d['measure_cores']}. Milliseconds from the "
        f"change reaching the engine (`update`), median (min-max) of {REPEATS}, a new text each time unless "
        "it ran before.", "",
        "| model | tokens | to the graph and cards | to timings and memory |",
        "|---|---|---|---|",
        *(f"| {' | '.join(r)} |" for r in rows), "",
        "## What the run plan assumes (explorer/serving/plan.py), at 100 tokens", "",
        "| model | train step / the capture's forward (bound: capture.STEP_BOUND) | capture / train step (bound: "
        "plan.CAPTURE_COST) | profiled train step / train step (bound: plan.PROFILER_COST) |", "|---|---|---|---|",
        *(f"| {' | '.join(r)} |" for r in plan_rows), "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
