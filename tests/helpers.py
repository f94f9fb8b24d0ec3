"""What several tests share: the real app in its own process (the launcher the benchmarks use too), Debian's
Chromium for the browser tests (installed by the suite itself when missing, never a test tool's own browser
download), and source lines derived from the code rather than typed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from bench.appserver import start_app, stop_app

ROOT = Path(__file__).resolve().parents[1]

CHROMIUM = Path("/usr/bin/chromium")
PACKAGES = ["chromium", "fonts-noto-color-emoji", "fonts-noto-cjk"]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def ensure_chromium() -> str:
    """The path of Debian's chromium, installing it with apt-get if needed; raises with the reason if not."""
    if CHROMIUM.exists():
        return str(CHROMIUM)
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise RuntimeError("the browser tests need Debian's chromium: run `apt-get install chromium` as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in ([apt, "update", "-q"], [apt, "install", "-y", "-q", "--no-install-recommends", *PACKAGES]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
    return str(CHROMIUM)


def source_line(path: str, marker: str) -> str:
    """'path:N' for the first line of the project file `path` that contains `marker`."""
    lines = ROOT.joinpath(path).read_text().splitlines()
    return f"{path}:{next(i + 1 for i, ln in enumerate(lines) if marker in ln)}"


def early_exit_branch() -> str:
    """Where the early-exit model's data-dependent `if` is: the line that breaks the compiled graph."""
    return source_line("models/early_exit.py", "confidence.min()")


__all__ = ["ARGS", "early_exit_branch", "ensure_chromium", "source_line", "start_app", "stop_app"]
