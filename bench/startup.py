"""Start-up to the first served page: `python -m bench.startup [--runs 5]` -> bench/RESULTS-startup.md.

Launches `python app.py` (without the background inductor warm-up, which comes after the page is served)
on a free loopback port, and times it until the page answers 200."""

from __future__ import annotations

import statistics
import time

from bench.appserver import start_app, stop_app
from bench.common import parser
from explorer.core import machine


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "RESULTS-startup.md")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    runs = 1 if args.quick else args.runs
    times = []
    for _ in range(runs):
        proc, _, seconds = start_app()
        stop_app(proc)
        times.append(seconds)
    m = machine.describe()
    args.out.write_text(
        "# Start-up: `python app.py` to the first served page\n\n"
        f"Measured by `python -m bench.startup` on {m['cpu']} ({m['cores']} cores), torch {m['torch']}, "
        f"{time.strftime('%Y-%m-%d')}; {args.runs} launches (the start-up inductor warm-up runs after the page "
        "is served and is not included).\n\n"
        f"- median {statistics.median(times):.1f} s, min {min(times):.1f} s, max {max(times):.1f} s (goal: 10 s)\n"
        f"- each: {', '.join(f'{t:.1f} s' for t in times)}\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
