"""What every benchmark script shares: `--out` (where its results go) and `--quick` (its smallest run, which
the test suite uses to check that the script runs as the README shows it)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from explorer.eager.compare import Comparison


def parser(doc: str | None, results: str, runs: int | None = None) -> argparse.ArgumentParser:
    """An argument parser with `--out` (default: bench/`results`) and `--quick`; with `runs`, `--runs` too (that
    many runs in a row by default, to see that each verdict comes out the same)."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(__file__).with_name(results),
                   help=f"where the results go (default: bench/{results})")
    p.add_argument("--quick", action="store_true", help="the smallest run: checks that the script works")
    if runs is not None:
        p.add_argument("--runs", type=int, default=runs,
                       help=f"runs of the whole benchmark, one after the other (default {runs})")
    return p


def agreement(rows: dict[str, list[Comparison | None]]) -> list[str]:
    """Runs of one benchmark in a row, compared row by row: each run's verdict (which side is faster by its whole
    interval, not resolved, or too few pairs) and interval, whether every run gave the same kind of verdict, and
    whether every two intervals overlap (a markdown table)."""
    lines = ["| row | verdict per run | interval per run | the same verdict each run | intervals overlap |",
             "|---|---|---|---|---|"]
    for name, runs in rows.items():
        kinds = [verdict_kind(c) for c in runs]
        bounds = [(c.low, c.high) for c in runs if c is not None and c.low is not None and c.high is not None]
        overlap = "—" if len(bounds) < 2 else \
            "yes" if max(lo for lo, _ in bounds) <= min(hi for _, hi in bounds) else "NO"
        said = " / ".join(f"{c.low:.2f}-{c.high:.2f}x" if c is not None and c.low is not None and c.high is not None
                          else "—" for c in runs)
        lines.append(f"| {name} | {' / '.join(kinds)} | {said} | {'yes' if len(set(kinds)) == 1 else 'NO'} | "
                     f"{overlap} |")
    return lines


def verdict_kind(c: Comparison | None) -> str:
    if c is None:
        return "not compared"
    if not c.enough:
        return "too few pairs"
    return f"{c.faster} faster" if c.faster else "not resolved"


# The plots' titles as a person reads them, " | " between plots: a line plotly wrapped (<br>: one tspan per line,
# whose textContent runs the lines together, "64tokens") joined by a space.
TITLES_JS = ("() => [...document.querySelectorAll('.js-plotly-plot .gtitle')].map((t) => { "
             "const lines = [...t.querySelectorAll('tspan.line')]; "
             "return lines.length ? lines.map((l) => l.textContent).join(' ') : t.textContent; }).join(' | ')")


# Whether the Playground's run on screen has ended: its timings shown (the core they ran on), no stage still measuring.
SETTLED_JS = ("() => { const t = document.body.innerText; return t.includes('(cpu, core') && "
              "!t.includes('timing forward and train step next') && !t.includes('Measuring:'); }")


# Milliseconds from now until the page first shows text matching a pattern (window.geShownAfter; null while it has
# not): a state a fast run passes through may be gone before an expect() polls for it.
WATCH_JS = """pattern => {
  const start = performance.now(), wanted = new RegExp(pattern);
  window.geShownAfter = null;
  const seen = new MutationObserver(() => {
    if (!wanted.test(document.body.innerText)) return;
    window.geShownAfter = performance.now() - start;
    seen.disconnect();
  });
  seen.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def measured_by(script: str, quick: bool) -> str:
    """A results file's first words: the command that measured it, and on what, when."""
    from explorer.core import machine

    m = machine.describe()
    return (f"Measured by `python -m bench.{script}{' --quick' if quick else ''}` on {m['device']} ({m['cpu']}, "
            f"{m['cores']} cores), torch {m['torch']}, {time.strftime('%Y-%m-%d')}")
