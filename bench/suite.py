"""The test suite's time, and where it goes: `python -m bench.suite` -> bench/RESULTS-suite.md.

Runs the README's test command (`python -m pytest`: two processes sharing out groups of tests) in a fresh
interpreter with every test's duration recorded, and writes the wall time, the tests counted, and the seconds per
group (tests/groups.py: the unit the two processes share out, a file, the browser modules, a bench
script): the longest groups are what keeps one process busy while the other idles. `--quick` times one small
folder instead of the whole suite."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench.common import parser
from explorer.core import machine
from tests.groups import group_of

ROOT = Path(__file__).resolve().parents[1]
SHOWN = 15  # the longest groups listed
_DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)", re.M)
_COUNTS = re.compile(r"^=* ?(\d+ (?:passed|failed).*?) in ([\d.]+)s", re.M)  # (-q drops the ='s)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-suite.md").parse_args(argv)
    command = [sys.executable, "-m", "pytest", "--durations=0", "-q", "-p", "no:randomly"]
    if args.quick:
        command += ["-n", "0", "tests/draw"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    counts = _COUNTS.findall(done.stdout)
    said = counts[-1][0] if counts else "no summary"
    by_group: dict[str, float] = defaultdict(float)
    for seconds, _, nodeid in _DURATION.findall(done.stdout):
        by_group[group_of(nodeid)] += float(seconds)
    m = machine.describe()
    lines = ["# The test suite's time", "",
             f"Measured by `python -m bench.suite{' --quick' if args.quick else ''}` on {m['cpu']} ({m['cores']} "
             f"cores), torch {m['torch']}, {time.strftime('%Y-%m-%d')}: `python -m pytest` (the README's test command, "
             "installed already), every test's duration recorded.", "",
             f"- wall time: {wall:.0f} s ({wall / 60:.1f} min); exit code {done.returncode}; {said}",
             f"- the tests' own seconds, summed: {sum(by_group.values()):.0f} s over {len(by_group)} groups", "",
             "| group (a unit the test processes share out) | seconds |", "|---|---:|"]
    lines += [f"| {g} | {s:.1f} |" for g, s in sorted(by_group.items(), key=lambda kv: -kv[1])[:SHOWN]]
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    if failed:  # what failed, in pytest's words (-ra): a flake seen once is then read, not guessed
        lines += ["", "What failed:", "", *(f"- `{line[:400]}`" for line in failed)]
    args.out.write_text("\n".join(lines) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
