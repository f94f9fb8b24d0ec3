"""From an edit in the Code tab to the edited code's graph painted, in a real browser: `python -m bench.code_edit`.

The real app (bench/appserver.py) with the Code tab allowed (GE_ALLOW_CODE=1), in Debian's Chromium at 1280x720.
For each zoo model at its default config and input (the Playground's), the editor's whole text is replaced, as a
paste does, alternately by the model's file with one more operation in its forward (the output doubled: one node
more) and by the file as shipped, then run by Ctrl+Enter or by the pause in typing (ui/code.PAUSE_MS), two samples
of one then two of the other; the clock runs from the paste until the graph's title shows the new node count: the
pause if any, the code worker's rebuild from the edited source and capture, the figure, and the browser's drawing
(the forward's timing follows in a second job, not waited for). Writes bench/RESULTS-code.md: median and min-max
per trigger over REPEATS edits per model; the goal, 1.5 s, is for the pause (a person who types and waits)."""

from __future__ import annotations

import re
import statistics
import time
from typing import Any

from bench.common import parser
from bench.screenshot import measure_on_an_app, results_page
from explorer.code.edits import original_source
from explorer.ui.code import PAUSE_MS
from models import ZOO, entry

REPEATS = 8  # half by Ctrl+Enter, half by the pause
TRIGGERS = ("Ctrl+Enter", "pause")
GOAL_S = 1.5
_TITLE = "() => [...document.querySelectorAll('.js-plotly-plot .gtitle')].map((t) => t.textContent).join(' | ')"
_NODES = re.compile(r"edited code: (\d+) nodes")


def doubled(model: str) -> str:
    """The model's file with its forward's output doubled: one operation, one node, more."""
    cls = entry(model).model_cls.__name__
    return (original_source(model) + f"\n\n_shipped = {cls}.forward\n\n\ndef _doubled(self, *args, **kwargs):\n"
            f"    return _shipped(self, *args, **kwargs) * 2\n\n\n{cls}.forward = _doubled\n")


def _shown(page) -> int | None:
    found = _NODES.search(page.evaluate(_TITLE))
    return int(found.group(1)) if found else None


def _edit(page, source: str, before: int, trigger: str) -> tuple[float, int]:
    """Seconds from replacing the editor's text to the graph's title naming another node count than `before`."""
    page.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    start = time.perf_counter()
    page.keyboard.insert_text(source)
    if trigger == "Ctrl+Enter":
        page.keyboard.press("Control+Enter")
    page.wait_for_function(f"() => {{ const m = ({_TITLE})().match(/edited code: (\\d+) nodes/); "
                           f"return m && Number(m[1]) !== {before}; }}", timeout=120_000)
    took = time.perf_counter() - start
    return took, _shown(page) or 0


def measure(page: Any, url: str, quick: bool) -> list[str]:
    """The results table's rows, measured in `page` on the app at `url` (its Code tab allowed; the tests pass
    theirs: one app per test process)."""
    rows = []
    for model in ["rnn"] if quick else list(ZOO):
        page.goto(f"{url}?model={model}")
        page.wait_for_selector(".cards .card", timeout=120_000)
        page.get_by_role("tab", name="Code").click()
        page.wait_for_function(f"() => /edited code: \\d+ nodes/.test(({_TITLE})())", timeout=120_000)
        shown = _shown(page) or 0  # the shipped file's graph: untimed (the worker's first start)
        times: dict[str, list[float]] = {t: [] for t in TRIGGERS}
        nodes = {shown}
        for i in range(1 if quick else REPEATS):
            trigger = TRIGGERS[i // 2 % 2]
            took, shown = _edit(page, doubled(model) if i % 2 == 0 else original_source(model), shown, trigger)
            times[trigger].append(took)
            nodes.add(shown)
            print(model, trigger, f"{took:.2f} s", shown, flush=True)
        said = [f"{statistics.median(t):.2f} ({min(t):.2f}-{max(t):.2f})" if t else "—" for t in times.values()]
        paused = times["pause"] or times["Ctrl+Enter"]  # --quick: one sample, by Ctrl+Enter
        rows.append(f"| {model} | {min(nodes):,}-{max(nodes):,} | {' | '.join(said)} | "
                    f"{sum(map(len, times.values()))} | {'yes' if statistics.median(paused) <= GOAL_S else 'no'} |")
    return rows


def results(rows: list[str], quick: bool) -> str:
    return results_page(
        "From an edit in the Code tab to its graph painted", "code_edit", quick,
        "Each sample: the editor's text replaced (the model's file with its output doubled, then as shipped, "
        f"alternately) and run by Ctrl+Enter or by the pause in typing ({PAUSE_MS} ms, counted in its samples), "
        "until the graph's title shows the new node count: the code worker's rebuild and capture, the figure, the "
        "transfer, Plotly's drawing (the forward's timing follows, not waited for). Each zoo model at its default "
        f"config and the Playground's default input. Goal: {GOAL_S} s from the last key to the graph, when the "
        "person pauses.",
        ["| model | nodes | Ctrl+Enter: median s (min-max) | after a pause: median s (min-max) | samples | "
         "within the goal |", "|---|---|---|---|---:|---|"], rows)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-code.md").parse_args(argv)
    measure_on_an_app(measure, results, args.out, args.quick, {"GE_ALLOW_CODE": "1"})


if __name__ == "__main__":
    main()
