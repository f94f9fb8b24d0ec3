"""A short load test (5 sessions, 20 s) of the real app over loopback; bench/load.py runs the long one."""

import pytest

from bench.appserver import start_app, stop_app
from bench.load import run_load

pytestmark = pytest.mark.slow


def test_five_sessions_for_twenty_seconds_without_errors_and_with_honest_timings():
    proc, url, _ = start_app()
    try:
        r = run_load(url, sessions=5, duration_s=20)
    finally:
        stop_app(proc)
    assert r["errors"] == 0, r["error_samples"]
    assert r["interactions"] >= 10 and r["reference_samples"] >= 1
    # One measurement at a time, server-wide: the reference under load stays near its time alone.
    assert r["reference_loaded_ms"] <= 1.5 * r["reference_alone_ms"], r
