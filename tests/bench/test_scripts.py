"""Every benchmark script runs in its smallest mode (`--quick`) and writes its results: through its `main(argv)` in
this process, as `python -m bench.<name> --quick` would run it, except those whose point is a fresh interpreter
(start-up, a first compile), which run as the README shows them; those that start the app drive the test
process's shared one instead (tests/conftest.py); and those that drive Chromium, whose measurement
runs in the browser tests' own browser on their app (tests/app/test_browser_bench.py, lesson_status in
tests/app/test_browser_lessons.py on its quick board's). Each script is a group of its own
(tests/conftest.py), so that the test processes share them out. bench.load is run by tests/app/test_load.py, which
checks its figures too."""

import importlib
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from bench import page_load

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ("__init__", "common", "appserver", "cpu_per_test", "phases", "screenshot")  # used by the scripts
SCRIPTS = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if p.stem not in HELPERS)
SUBPROCESS = ("first_compile", "startup")  # see the module's docstring
IN_THE_BROWSER_TESTS = ("code_edit", "graph_paint", "lesson_status", "page_load")
STARTS_THE_APP = ["code_edit", "ddp_responsiveness", "graph_paint", "lesson_status", "load", "page_load", "room",
                  "soak", "startup"]
# their quick runs drive the test process's app (tests/conftest.py)
ON_THE_SHARED_APP = ("ddp_responsiveness", "room", "soak")


def test_every_script_is_listed():
    assert SCRIPTS == ["batching", "claims", "code_edit", "compile_costs", "compile_interference", "costs", "ddp",
                       "ddp_responsiveness", "debug", "deploy", "first_compile", "gc_pause", "generate", "graph_paint",
                       "lesson_status", "library", "lines_overhead", "load", "optimize", "page_load", "reproduce",
                       "room", "shapes", "soak", "startup", "suite", "update_latency", "worker_memory", "worker_start"]
    assert sorted(s for s in SCRIPTS if any(w in (ROOT / "bench" / f"{s}.py").read_text() for w in (
        "start_app", "measure_on_an_app"))) == STARTS_THE_APP
    for script in SCRIPTS:  # each runs from its main(argv), as python -m runs it
        text = (ROOT / "bench" / f"{script}.py").read_text()
        assert "def main(argv: list[str] | None = None)" in text and "parse_args(argv)" in text, script


@pytest.mark.slow
@pytest.mark.parametrize("script", [s for s in SCRIPTS if s != "load" and s not in IN_THE_BROWSER_TESTS])
def test_the_script_runs_and_writes_its_results(script, tmp_path, request, monkeypatch):
    out = tmp_path / "results.md"
    argv = ["--quick", "--out", str(out)]
    if script in ON_THE_SHARED_APP:  # (the start of an app of their own is bench.startup's to measure)
        app = request.getfixturevalue("shared_app")
        module = importlib.import_module(f"bench.{script}")
        monkeypatch.setattr(module, "start_app", lambda *_, **__: (app.proc, app.url, 0.0))
        monkeypatch.setattr(module, "stop_app", lambda _: None)
    if script in SUBPROCESS:
        done = subprocess.run([sys.executable, "-m", f"bench.{script}", *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    else:
        importlib.import_module(f"bench.{script}").main(argv)
    assert out.read_text().count("\n") >= 3


def test_a_childs_seconds_count_once_whether_it_is_reaped_before_or_during_a_test():
    from bench.cpu_per_test import tree_cpu, used

    burn = [sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"]
    child = subprocess.Popen([*burn[:2], burn[2] + "\nprint('burnt', flush=True)\ninput()"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)  # burns, says so, then waits
    assert child.stdout.readline() == b"burnt\n"
    before = tree_cpu(os.getpid())  # the child has used its 0.5 s before the "test"
    child.communicate(b"\n")  # reaped during it: its parent's cutime takes all its seconds
    subprocess.run(burn, check=True)  # a child started and reaped during it: its 0.5 s are the test's
    seconds = used(before, tree_cpu(os.getpid()))
    assert 0.4 < seconds < 0.9, seconds


def test_an_idle_tick_is_shared_among_the_tests_running_then():
    from bench.suite import idle_by_test

    spans = [(0.0, 10.0, "a"), (5.0, 20.0, "b")]  # two test processes, overlapping from 5 s to 10 s
    idle = idle_by_test([(2.0, 1.0), (7.0, 1.0), (15.0, 0.5), (25.0, 0.25)], spans)
    assert idle == {"a": 1.5, "b": 1.0, "(between tests)": 0.25}


def test_page_loads_against_another_checkout_are_paired_in_turns_and_said_as_this_over_that(monkeypatch):
    """bench.page_load --against: each pair's first load alternates between the apps, and each ratio is this
    checkout's over the other's (below 1: this one costs less), from the loads' own seconds."""
    order: list[str] = []

    def load(browser, url, server, idle_s):
        order.append(url)
        cost = {"here": 1.0, "there": 2.0}[url]
        return {key: cost * (1 + len(order) / 1000) for key in page_load.PAIRED}

    monkeypatch.setattr(page_load, "_load", load)
    page = types.SimpleNamespace(context=types.SimpleNamespace(browser=None))
    rows = page_load.paired(page, ("here", 1), ("there", 2), pairs=8, idle_s=0)
    assert order[2:] == ["here", "there", "there", "here"] * 4  # (after each app's untimed first page)
    chromium = next(r for r in rows if r.startswith("| Chromium's CPU-seconds"))
    assert re.search(r"\| 0\.50 \(95% interval 0\.50-0\.50x, 8 pairs\) \| 8 of 8 \|$", chromium), chromium
