"""From a change of input to the new graph painted, in a real browser: `python -m bench.graph_paint`.

The real app (bench/appserver.py) in Debian's Chromium at 1280x720: the RNN's text is replaced (as a paste
does) with one of a length whose graph has about 2,000 or 8,000 nodes, and the clock runs until the autograd
graph's title shows the new node count, i.e. the server captured the run, built the figure and the browser drew
it (the graph is sent before the timings, which fill in after and are not waited for). Lengths alternate so every
update draws a new graph. Writes bench/RESULTS-paint.md: median and min-max over REPEATS per size."""

from __future__ import annotations

import re
import statistics
import time
from typing import Any

from bench.common import SETTLED_JS, TITLES_JS, parser
from bench.screenshot import measure_on_an_app, results_page
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length

SIZES = {"about 2,000 nodes": 125, "about 8,000 nodes": 500}  # RNN tokens (16 graph nodes per token, default cell)
REPEATS = 6
INPUT = "input (each UTF-8 byte is one token)"


def _paint(page, text: str) -> tuple[float, int]:
    """Seconds from setting the input to the graph's title naming this run's token count; the node count shown.
    Starts once the previous run has ended, timings and memory stage included (a person reads the graph before
    typing again)."""
    tokens = len(text.encode())
    page.wait_for_function(SETTLED_JS, timeout=120_000)
    start = time.perf_counter()
    page.get_by_label(INPUT).fill(text)
    page.wait_for_function(f"() => ({TITLES_JS})().includes(', {tokens} tokens')", timeout=120_000)
    took = time.perf_counter() - start
    nodes = int(re.search(r"Autograd graph: ([\d,]+) nodes", page.evaluate(TITLES_JS)).group(1).replace(",", ""))
    return took, nodes


def measure(page: Any, url: str, quick: bool) -> list[str]:
    """The results table's rows, measured in `page` on the app at `url` (the tests pass theirs: one app per test
    process)."""
    sizes = {"about 800 nodes": 50} if quick else SIZES
    repeats = 1 if quick else REPEATS
    page.goto(url)
    page.wait_for_selector(".cards .card", timeout=120_000)
    _paint(page, text_of_length(DEFAULT_TEXT, 20))  # untimed: the page's first run and its memory stage end
    times: dict[str, list[float]] = {k: [] for k in sizes}
    nodes: dict[str, int] = {}
    for i in range(repeats):
        for label, tokens in sizes.items():  # alternating: each update draws a new graph
            text = text_of_length(DEFAULT_TEXT, tokens - i % 2)  # a new text each time: it really runs
            took, nodes[label] = _paint(page, text)
            times[label].append(took)
            print(label, f"{took:.2f} s", flush=True)
    return [f"| {label} | {nodes[label]:,} | {statistics.median(ts):.2f} | {min(ts):.2f}-{max(ts):.2f} | {len(ts)} |"
            for label, ts in times.items()]


def results(rows: list[str], quick: bool) -> str:
    return results_page(
        "From a change of input to the new graph painted", "graph_paint", quick,
        "Each sample: the RNN's input replaced, until the graph's title shows the new run (the server's capture and "
        "figure, the transfer, Plotly's drawing; the timings and memory that follow are not waited for), started "
        "once the previous run has ended.",
        ["| graph | nodes | median s | min-max s | samples |", "|---|---:|---:|---|---:|"], rows)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-paint.md").parse_args(argv)
    measure_on_an_app(measure, results, args.out, args.quick)


if __name__ == "__main__":
    main()
