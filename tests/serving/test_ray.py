"""The measurement and compile pools on a real Ray cluster: a local head started on loopback with 2 CPUs (one
compile actor, one measurement actor), the app pointed at it with GE_RAY_ADDRESS, the load script and a compile
against the app, and Ray workers killed mid-job."""

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.appserver import connect, free_port
from bench.load import run_load
from explorer.core.progress import Progress
from explorer.runs.session import Session
from explorer.serving.plan import plan
from explorer.workers.protocol import Job, WorkerContext, WorkerFailure
from tests.helpers import ROOT, start_app, stop_app

pytestmark = [pytest.mark.slow, pytest.mark.owns_app]  # an app placed on a Ray cluster
RAY = str(Path(sys.executable).with_name("ray"))


@pytest.fixture(scope="module")
def cluster():
    assert shutil.which(RAY), "ray is installed by requirements-dev.txt (requirements-ray.txt)"
    port = free_port()
    subprocess.run([RAY, "start", "--head", "--num-cpus", "2", "--port", str(port), "--node-ip-address",
                    "127.0.0.1", "--include-dashboard", "false", "--disable-usage-stats"],
                   check=True, capture_output=True, timeout=120)
    yield f"127.0.0.1:{port}"
    if "ray" in sys.modules:  # this process's own connection (the pools tested here), before the cluster goes
        sys.modules["ray"].shutdown()
    subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120)


def _spawned_children(pid: int) -> list[str]:
    """Command lines of the processes `pid` started with multiprocessing (the embedded workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append((entry / "cmdline").read_text().replace("\0", " "))
        except OSError:  # gone meanwhile
            continue
    return [c for c in found if "multiprocessing" in c]


def test_the_app_measures_and_compiles_on_ray_actors_under_a_class_and_reports_which_node(cluster):
    proc, url, _ = start_app({"GE_RAY_ADDRESS": cluster, "GE_COMPILE_WORKERS": "1"})
    try:
        client = connect(url)
        report = client.predict("rnn", "{}", "measured on a Ray node", "", api_name="/inspect")
        r = run_load(url, sessions=3, duration_s=12, mode="class")
        compiled = client.predict("transformer", "{}", "compiled on a Ray node", "", "eager", api_name="/inspect")
        embedded = _spawned_children(proc.pid)
    finally:
        stop_app(proc)
    assert report["eager"]["measured_on"] == report["machine"]["node"] == os.uname().nodename
    forward = compiled["compiled"]["forward"]
    assert forward["node"] == os.uname().nodename and forward["runs"] >= 3 and compiled["compiled"]["fallback"] is None
    assert embedded == []  # neither a measurement process nor a compile worker on the app's own machine
    assert report["eager"]["forward"]["runs"] >= 3 and report["memory"]["peak_train_bytes"] > 0
    assert r["errors"] == 0, r["error_samples"]
    assert r["link_opened"] == 3 and r["link_reused"] == 2  # the same sharing as embedded
    assert r["overlapping_timings"] == 0 and {c for cores in r["timing_cores"] for c in cores} <= {0, 1}, r


def test_a_cluster_too_small_for_its_pools_stops_the_launch_with_the_reason(cluster):
    env = {**os.environ, "GE_RAY_ADDRESS": cluster, "GE_COMPILE_WORKERS": "2", "GE_WARM_COMPILE": "0",
           "GRADIO_SERVER_PORT": str(free_port())}
    done = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "Graph Explorer cannot start: the Ray cluster at" in done.stderr and "Traceback" not in done.stderr
    assert "has 2 CPU(s); its 2 compile actor(s) (GE_COMPILE_WORKERS) and at least one measurement actor need 3" \
        in done.stderr


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


@dataclass(frozen=True)
class Nap(Job[str]):
    """A job that says what it does, then sleeps: long enough to be killed or timed out mid-way."""

    seconds: float

    def run(self, ctx: WorkerContext) -> str:
        ctx.phase("napping")
        time.sleep(self.seconds)
        return f"woke in {os.getpid()}"


def test_a_compile_actor_streams_its_phase_and_a_killed_or_timed_out_one_is_replaced(cluster):
    from explorer.serving.raypool import RayCompileService

    svc = RayCompileService(cluster, timeout_s=20)
    try:
        svc.start()
        first = svc.pid
        steps = list(svc.run(Nap(1.5)))
        assert steps[-1] == f"woke in {first}"
        assert any(isinstance(s, Progress) and s.phase.startswith("napping (on Ray, ") for s in steps), steps
        running = svc.run(Nap(30))
        next(running)
        os.kill(first, signal.SIGKILL)
        with pytest.raises(WorkerFailure, match="died"):
            list(running)
        assert list(svc.run(Nap(0.1)))[-1] != f"woke in {first}" and svc.pid != first  # a new actor took over
        svc.timeout_s = 1
        start = time.monotonic()
        with pytest.raises(WorkerFailure, match="timed out after 1 s"):
            list(svc.run(Nap(30)))
        assert time.monotonic() - start < 10
    finally:
        svc.stop()
