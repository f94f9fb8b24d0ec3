"""A short load test (5 sessions, 20 s) of the real app over loopback; bench/load.py runs the long one."""

import os

import pytest

from bench.load import run_load
from tests.helpers import start_app, stop_app

pytestmark = pytest.mark.slow


def test_five_sessions_for_twenty_seconds_without_errors_and_with_timings_kept_apart():
    proc, url, _ = start_app()
    try:
        r = run_load(url, sessions=5, duration_s=20)
    finally:
        stop_app(proc)
    assert r["errors"] == 0, r["error_samples"]
    assert r["interactions"] >= 10 and r["reference_samples"] >= 1
    # The mechanism that keeps timings honest under load (the ratio alone vs loaded is bench/load.py's to
    # measure: load from outside the app bends it): no two timings overlapped, every one ran on the measuring
    # core, and nothing else of the server's (threads, the compile worker) is allowed on that core.
    assert r["timings"] >= 2 * r["interactions"] and r["overlapping_timings"] == 0, r
    assert r["timing_cores"] == [tuple(r["measure_cores"])], r
    if len(os.sched_getaffinity(0)) >= 2:  # with one core there is nothing to keep apart
        assert not set(r["measure_cores"]) & set(r["other_cores"]), r
