"""A short load test (5 sessions, 10 s) of the real app over loopback, by the load script as the README runs it
(`python -m bench.load`, which starts the app itself); the README's long runs are the same script."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.owns_app]  # bench.load starts the app it loads
ROOT = Path(__file__).resolve().parents[2]


def test_a_class_of_five_opens_one_link_then_types_for_ten_seconds_without_errors_timings_kept_apart(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bench.load", "--sessions", "5", "--duration", "10", "--mode",
                           "class", "--out", str(tmp_path / "results.md"), "--json", str(tmp_path / "r.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    r = json.loads((tmp_path / "r.json").read_text())
    written = (tmp_path / "results.md").read_text()
    assert "5 sessions for 10 s, class" in written and f"({r['machine']['cpu']}, " in written  # what it ran on
    assert r["machine"]["device"] == "cpu" and r["machine"]["cpu"]
    assert r["errors"] == 0, r["error_samples"]
    assert r["interactions"] >= 10 and r["reference_samples"] >= 1
    assert r["teacher"]["edits"] >= 1 and r["teacher"]["errors"] == 0, r["teacher"]  # the client at normal priority
    assert r["student_processes"] == 1 and r["students_cpu_s"] > 0  # five students: one process of them, counted
    assert r["workers_cpu_s"] > 0, r  # the measuring and compile workers, forked from the app's fork server, counted
    # The mechanism that keeps timings honest under load (the ratio alone vs loaded is bench/load.py's to
    # measure: load from outside the app bends it): no two timings overlapped, every one ran on the measuring
    # core, and nothing else of the server's (threads, the compile worker) is allowed on that core.
    assert r["timings"] >= 2 * r["interactions"] and r["overlapping_timings"] == 0, r
    assert {c for cores in r["timing_cores"] for c in cores} <= set(r["measure_cores"]), r
    # The shared link was measured once: the other four were shown that measurement, labelled as reused.
    assert r["link_opened"] == 5 and r["link_reused"] == 4, r
    if len(os.sched_getaffinity(0)) >= 2:  # with one core there is nothing to keep apart
        assert not set(r["measure_cores"]) & set(r["other_cores"]), r


def test_the_script_sees_a_graph_whose_title_wraps_before_its_tokens():
    """The students' time to the graph is read off the first streamed view whose plot's title names the input's
    tokens: a title wrapped there ("tree hidden=16, 64<br>tokens") counts too (it once counted only at the
    final view, and the tree's graphs looked seconds late)."""
    from bench.load import shows_graph
    from explorer.runs.session import Session
    from explorer.views.figures import graph_figure

    text = "the graph grows with every token while loops unroll and branches"
    s = Session()
    s.configure("tree", {"hidden": 16})
    real = graph_figure(s.capture(text)).to_json()
    assert ", 64 tokens" in real
    plot = real.replace(", 64 tokens", ", 64<br>tokens")  # the title wrapped there, as a longer one is
    for shown in (real, plot):
        assert shows_graph(({"plot": shown},), text) and not shows_graph(({"plot": shown},), text + " more")
    assert not shows_graph(({"__type__": "update"},), text)  # an output left unchanged
