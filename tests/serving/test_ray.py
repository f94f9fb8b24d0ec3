"""The measurement pool on a real Ray cluster: a local head started on loopback with 2 CPUs, the app pointed at
it with GE_RAY_ADDRESS, the load script against the app, and a Ray worker killed mid-way."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gradio_client import Client

from bench.appserver import free_port
from bench.load import run_load
from explorer.serving.plan import plan
from explorer.session import Session
from tests.helpers import start_app, stop_app

pytestmark = pytest.mark.slow
RAY = str(Path(sys.executable).with_name("ray"))


@pytest.fixture(scope="module")
def cluster():
    assert shutil.which(RAY), "ray is installed by requirements-dev.txt (requirements-ray.txt)"
    port = free_port()
    subprocess.run([RAY, "start", "--head", "--num-cpus", "2", "--port", str(port), "--node-ip-address",
                    "127.0.0.1", "--include-dashboard", "false", "--disable-usage-stats"],
                   check=True, capture_output=True, timeout=120)
    yield f"127.0.0.1:{port}"
    subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120)


def test_the_app_measures_on_ray_actors_under_a_class_and_reports_which_node(cluster):
    proc, url, _ = start_app({"GE_RAY_ADDRESS": cluster})
    try:
        report = Client(url, verbose=False).predict("rnn", "{}", "measured on a Ray node", "", api_name="/inspect")
        r = run_load(url, sessions=3, duration_s=12, mode="class")
    finally:
        stop_app(proc)
    assert report["eager"]["measured_on"] == report["machine"]["node"] == os.uname().nodename
    assert report["eager"]["forward"]["runs"] >= 3 and report["memory"]["peak_train_bytes"] > 0
    assert r["errors"] == 0, r["error_samples"]
    assert r["link_opened"] == 3 and r["link_reused"] == 2  # the same sharing as embedded
    assert r["overlapping_timings"] == 0 and {c for cores in r["timing_cores"] for c in cores} <= {0, 1}, r


def test_a_killed_ray_worker_is_a_message_and_a_retry_not_a_hung_request(cluster):
    from explorer.serving.raypool import RayPool

    pool = RayPool(cluster)
    try:
        pool.start()
        (_, _, pid), *_ = pool.where()
        session = Session()
        c = session.capture("the actor timing this dies")
        job = session.job(c, plan(c.capture).scaled(0.2))
        os.kill(pid, signal.SIGKILL)
        steps = [s for _ in range(pool.size) for s in pool.run(job)]  # one of the runs meets the dead actor
        said = [s.phase for s in steps if hasattr(s, "phase")]
        assert any("died" in p and "Retrying once on a new Ray actor" in p for p in said), said
        assert sum(hasattr(s, "forward") for s in steps) == pool.size
        assert pid not in [p for _, _, p in pool.where()]  # replaced
    finally:
        pool.stop()
