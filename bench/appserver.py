"""Start the real app in its own process on a free loopback port (benchmarks and tests share this)."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from functools import cache
from pathlib import Path

from gradio_client import Client

from explorer.core.machine import INTERNAL_ENV

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@cache
def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


CLIENT_TIMEOUT_S = 60  # each request's bound, a hang detector: httpx's default 5 s timed out reading the app's
# /config while its start-up warm-up measured and two other test processes ran (its event streams send a heartbeat
# every 15 s, so a silent stream still means a dead server)


def connect(url: str) -> Client:
    """A gradio_client `Client` that verifies certificates with one TLS context made once. gradio_client opens a
    new httpx client for every request, and with `ssl_verify=True` each one loads the CA bundle again: the load
    generator's CPU per run fell from 40-45 s to 12-13 s without it (bench/RESULTS-load.md), CPU spent on the
    server's two cores, where a real student's browser spends nothing. httpx takes a context where
    gradio_client's signature says bool."""
    return Client(url, verbose=False, ssl_verify=_tls(),  # type: ignore[arg-type]
                  httpx_kwargs={"timeout": CLIENT_TIMEOUT_S})


def start_app(extra_env: dict[str, str] | None = None, timeout_s: float = 90, cpus: str | None = None,
              log: Path | None = None, root: Path = ROOT) -> tuple[subprocess.Popen, str, float]:
    """(process, url, seconds from launch to the first served page); `cpus` restricts it like `taskset -c`; `log`
    keeps what the server prints (else it is dropped); `root`: the checkout whose app.py runs (another revision's,
    to compare with)."""
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k not in INTERNAL_ENV}  # this process's machine, not the app's
    env = {**inherited, "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False",
           "GE_WARM_COMPILE": "0", "GE_WARM_CLAIMS": "0", "GE_CLAIMS_FILE": "", **(extra_env or {})}
    start = time.monotonic()
    command = [*(["taskset", "-c", cpus] if cpus else []), sys.executable, "app.py"]
    with open(log or os.devnull, "wb") as out:  # the child holds its own copy of the file
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return proc, url, time.monotonic() - start
        except OSError:
            if proc.poll() is not None or time.monotonic() - start > timeout_s:
                proc.kill()
                raise RuntimeError("the app did not start") from None
            time.sleep(0.2)


def stop_app(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
