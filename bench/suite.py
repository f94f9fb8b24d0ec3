"""The test suite's time, and where it goes: `python -m bench.suite` -> bench/RESULTS-suite.md.

Runs the README's test command (`python -m pytest`: two processes sharing out groups of tests) in a fresh
interpreter with every test's duration recorded, and writes the wall time, the tests counted, and the seconds per
group (tests/groups.py: the unit the two processes share out, a file, the browser modules, a bench
script): the longest groups are what keeps one process busy while the other idles. Meanwhile it reads, twice a
second, the CPU seconds of every process started since the run began (the test processes, the apps they start,
their workers, Chromium, the C++ compiler), and writes them by kind: the suite is CPU-bound on two cores, so this,
not the wall time of a test, says what to cut (run it on an otherwise idle machine). `--quick` times one small
folder instead of the whole suite."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench.common import parser
from bench.cpu_per_test import CLOCK, stat
from explorer.core import machine
from tests.groups import DURATIONS, group_of

ROOT = Path(__file__).resolve().parents[1]
SHOWN = 15  # the longest groups listed
_DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)", re.M)
_COUNTS = re.compile(r"^=* ?(\d+ (?:passed|failed).*?) in ([\d.]+)s", re.M)  # (-q drops the ='s)


# What a process is, from its command line, first match wins (the suite's processes and what they start).
KINDS = (("chromium", "Chromium (the browser tests)"), ("playwright/driver", "Playwright's driver"),
         ("cc1plus", "the C++ compiler (inductor)"), ("/ray/", "Ray"), ("raylet", "Ray"), ("gcs_server", "Ray"),
         ("ray::", "Ray"), ("app.py", "apps' servers"),
         ("multiprocessing.spawn", "workers spawned (a fresh interpreter each: measurement, compile, labs)"),
         ("multiprocessing", "workers forked from a fork server (and the servers)"),
         ("exec(eval(sys.stdin.readline()))", "test processes (pytest-xdist's)"), ("-m pytest", "pytest's own"),
         ("-m explorer", "CLI subprocesses"), ("-m bench", "benchmark subprocesses"))
TICK_S = 0.5


def _stat(pid: str) -> tuple[int, float]:
    """A process's start (clock ticks since boot) and its CPU seconds so far (its own, not its children's)."""
    fields = stat(pid)
    return int(fields[19]), (int(fields[11]) + int(fields[12])) / CLOCK


def _idle_s() -> float:
    """The machine's idle seconds since boot, every core's (idle and iowait in /proc/stat)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return (int(fields[4]) + int(fields[5])) / CLOCK


def idle_by_test(idle: list[tuple[float, float]], spans: list[tuple[float, float, str]]) -> dict[str, float]:
    """Each tick's idle core-seconds shared among the tests running at its end (`spans`: start, end, test); a tick
    with none running is charged to what runs between tests (collection, sessions' set-up, the last test's wait)."""
    out: dict[str, float] = defaultdict(float)
    for when, seconds in idle:
        running = [nodeid for start, end, nodeid in spans if start <= when <= end] or ["(between tests)"]
        for nodeid in running:
            out[nodeid] += seconds / len(running)
    return out


class CpuByKind(threading.Thread):
    """Every process started after `since` (clock ticks since boot), its latest CPU seconds, read every TICK_S: a
    process living under TICK_S may be missed, and each loses what it used after its last reading."""

    def __init__(self, since: int) -> None:
        super().__init__(daemon=True)
        self.since, self.done = since, threading.Event()
        self.seen: dict[tuple[str, int], tuple[str, float]] = {}  # (pid, start) -> (kind, CPU s)
        self.idle: list[tuple[float, float]] = []  # (when, the cores' idle seconds since the tick before)

    def run(self) -> None:
        last = _idle_s()
        while not self.done.wait(TICK_S):
            now = _idle_s()
            self.idle.append((time.time(), now - last))
            last = now
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    start, cpu = _stat(pid)
                    if start <= self.since:  # (this process, and all that ran before it)
                        continue
                    kind = self.seen.get((pid, start), (None, 0.0))[0]
                    if kind is None:
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            line = f.read().replace(b"\0", b" ").decode(errors="replace")
                        kind = next((k for word, k in KINDS if word in line), "other")
                    self.seen[(pid, start)] = (kind, cpu)
                except (OSError, IndexError, ValueError):
                    continue  # it exited meanwhile

    def by_kind(self) -> dict[str, tuple[float, int]]:
        """Each kind's CPU seconds and its count of processes."""
        out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for kind, cpu in self.seen.values():
            out[kind][0] += cpu
            out[kind][1] += 1
        return {k: (v[0], int(v[1])) for k, v in out.items()}


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "RESULTS-suite.md")
    p.add_argument("--cold", action="store_true",
                   help="inductor's caches empty at the start, as on CI's fresh machine (a new, empty "
                        "TORCHINDUCTOR_CACHE_DIR): every kernel the suite compiles is compiled once")
    args = p.parse_args(argv)
    cache = tempfile.TemporaryDirectory(prefix="graph-explorer-cold-inductor-") if args.cold else None
    command = [sys.executable, "-m", "pytest", "--durations=0", "-q", "-p", "no:randomly", "-p", "bench.cpu_per_test"]
    per_test = Path(tempfile.mkstemp(prefix="graph-explorer-test-cpu-", suffix=".tsv")[1])
    if args.quick:
        command += ["-n", "0", "tests/draw"]
    start = time.perf_counter()
    sampler = CpuByKind(_stat("self")[0])
    sampler.start()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "GE_TEST_CPU_OUT": str(per_test),
                                   **({"TORCHINDUCTOR_CACHE_DIR": cache.name} if cache else {})})
    finally:
        sampler.done.set()
        sampler.join()
        if cache is not None:
            cache.cleanup()
    wall = time.perf_counter() - start
    counts = _COUNTS.findall(done.stdout)
    said = counts[-1][0] if counts else "no summary"
    by_group: dict[str, float] = defaultdict(float)
    for seconds, _, nodeid in _DURATION.findall(done.stdout):
        by_group[group_of(nodeid)] += float(seconds)
    m = machine.describe()
    lines = ["# The test suite's time", "",
             f"Measured by `python -m bench.suite{' --quick' if args.quick else ''}{' --cold' if args.cold else ''}` "
             f"on {m['cpu']} ({m['cores']} cores), torch {m['torch']}, {time.strftime('%Y-%m-%d')}: `python -m pytest` "
             "(the README's test command, installed already), every test's duration recorded"
             f"{'; inductor caches empty at the start (CI: a fresh machine)' if args.cold else ''}.", "",
             f"- wall time: {wall:.0f} s ({wall / 60:.1f} min); exit code {done.returncode}; {said}",
             f"- the tests' own seconds, summed: {sum(by_group.values()):.0f} s over {len(by_group)} groups", "",
             "| group (a unit the test processes share out) | seconds |", "|---|---:|"]
    lines += [f"| {g} | {s:.1f} |" for g, s in sorted(by_group.items(), key=lambda kv: -kv[1])[:SHOWN]]
    kinds = sampler.by_kind()
    cpu = sum(c for c, _ in kinds.values())
    lines += ["", f"CPU seconds of the processes the run started, read every {TICK_S} s: {cpu:.0f} s, "
              f"{cpu / (wall * m['cores']):.0%} of the {m['cores']} cores over the wall time.", "",
              "| process kind | CPU s | share | processes |", "|---|---:|---:|---:|"]
    lines += [f"| {k} | {c:.0f} | {c / (cpu or 1):.0%} | {n} |" for k, (c, n) in
              sorted(kinds.items(), key=lambda kv: -kv[1][0])]
    # all pytest printed (every test's durations; a failure's report): a flake seen once is then read, not guessed
    kept = Path(tempfile.gettempdir()) / f"graph-explorer-suite-{time.strftime('%Y%m%d-%H%M%S')}.log"
    kept.write_text(done.stdout + done.stderr)
    rows = [line.split("\t", 3) for line in per_test.read_text().splitlines()]
    per_test.unlink()
    tests_cpu = sorted(((float(cpu), nodeid) for cpu, _, _, nodeid in rows), reverse=True)
    idle = idle_by_test(sampler.idle, [(float(start), float(end), nodeid) for _, start, end, nodeid in rows])
    by_group_cpu: dict[str, float] = defaultdict(float)
    for cpu, nodeid in tests_cpu:
        by_group_cpu[group_of(nodeid)] += cpu
    lines += ["", f"CPU seconds per test (its test process and every process under it: the apps it started, their "
              f"workers, Chromium; `bench/cpu_per_test.py`): {sum(c for c, _ in tests_cpu):.0f} s over "
              f"{len(tests_cpu)} tests. By group:", "", "| group | CPU s |", "|---|---:|"]
    lines += [f"| {g} | {c:.0f} |" for g, c in sorted(by_group_cpu.items(), key=lambda kv: -kv[1])[:SHOWN]]
    lines += ["", f"The {SHOWN * 2} tests using the most:", "", "| test | CPU s |", "|---|---:|"]
    lines += [f"| `{nodeid}` | {cpu:.1f} |" for cpu, nodeid in tests_cpu[:SHOWN * 2]]
    lines += ["", f"The cores' idle seconds while the suite ran: {sum(s for _, s in sampler.idle):.0f} core-s of "
              f"{wall * m['cores']:.0f}, each tick's shared among the tests running then. The {SHOWN} tests most "
              "waited on:", "", "| test | idle core-s |", "|---|---:|"]
    lines += [f"| `{nodeid}` | {s:.1f} |" for nodeid, s in sorted(idle.items(), key=lambda kv: -kv[1])[:SHOWN]]
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    if failed:  # what failed, in pytest's words (-ra)
        lines += ["", f"What failed (pytest's whole output, with each failure's report: {kept}):", "",
                  *(f"- `{line[:400]}`" for line in failed)]
    args.out.write_text("\n".join(lines) + "\n")
    if not args.quick:  # the scheduler's order for the next runs (tests/groups.py)
        DURATIONS.write_text(json.dumps({g: round(s, 1) for g, s in sorted(by_group.items())}, indent=0) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
