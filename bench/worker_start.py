"""How long a worker takes to start, forked from the fork server or spawned: `python -m bench.worker_start`
-> bench/RESULTS-worker-start.md.

A worker (explorer/workers/process.py) starts whenever one is replaced: after a timeout, a crash, its jobs or its
memory ceiling, for each of the optimization lab's strategies, each shapes run. Each pair starts one worker each
way, in turns (which goes first alternates), and times from the start until the worker says it is ready (its
imports done, its cores set); the fork server's own first start is not timed (the app pays it once). Also read:
each worker's resident memory once ready (VmRSS; a forked worker's counts the pages it shares with the server)."""

from __future__ import annotations

import statistics
import time

from bench.common import measured_by, parser
from explorer.workers.process import WorkerProcess, resident_mb

PAIRS = 12
WAYS = ("spawned", "forked")


def _started(spawned: bool) -> tuple[float, float]:
    """(seconds until ready, MB resident then) for one worker started one way."""
    worker = WorkerProcess(name="measured", spawned=spawned)
    try:
        start = time.perf_counter()
        worker.start()
        took = time.perf_counter() - start
        return took, resident_mb(worker.pid) or float("nan")
    finally:
        worker.stop()


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-worker-start.md").parse_args(argv)
    pairs = 1 if args.quick else PAIRS
    _started(spawned=False)  # the fork server's own start: paid once per app, not per worker
    seconds: dict[str, list[float]] = {w: [] for w in WAYS}
    mb: dict[str, list[float]] = {w: [] for w in WAYS}
    for i in range(pairs):
        for way in WAYS if i % 2 == 0 else WAYS[::-1]:
            took, rss = _started(spawned=way == "spawned")
            seconds[way].append(took)
            mb[way].append(rss)
    # The pairs share one run (one machine state, one fork server): not independent, so no interval is drawn
    # from them; what the samples say without one is whether the two ranges overlap.
    apart = max(seconds["forked"]) < min(seconds["spawned"])
    lines = ["# How long a worker takes to start", "",
             f"{measured_by('worker_start', args.quick)}: {pairs} pairs, one worker started each way per pair, "
             "in turns; from the start to the worker's ready message.", "",
             "| started | median s | min-max s | resident MB once ready (median) |", "|---|---:|---|---:|"]
    lines += [f"| {way} | {statistics.median(seconds[way]):.2f} | {min(seconds[way]):.2f}-{max(seconds[way]):.2f} | "
              f"{statistics.median(mb[way]):,.0f} |" for way in WAYS]
    lines += ["", f"Every forked start took less than every spawned one (the ranges do not overlap; the median "
              f"ratio {statistics.median(seconds['spawned']) / statistics.median(seconds['forked']):.1f}x)." if apart
              else "The two ranges overlap: in this run no start of one way was always faster than the other's."]
    args.out.write_text("\n".join(lines) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
