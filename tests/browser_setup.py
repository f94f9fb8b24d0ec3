"""Debian's Chromium for the browser tests, installed by the test suite itself when it is missing (never a
test tool's own browser download)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

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
