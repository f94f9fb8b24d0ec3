"""What several tests share: the real app in its own process (the launcher the benchmarks use too), Debian's
headless Chromium for the browser tests (installed by the suite itself when missing, never a test tool's own browser
download), axe-core for the accessibility audit (from the npm registry, pinned), and source lines derived from the
code rather than typed."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.appserver import start_app as _start_app
from bench.appserver import stop_app
from bench.screenshot import CHROMIUM_ARGS as ARGS

ROOT = Path(__file__).resolve().parents[1]

# Chromium's headless shell (what Playwright itself runs headless): the same Blink as the full browser the
# benchmarks measure with (bench/screenshot.py), without the full browser's windowing layers, so fewer CPU-seconds
# a page load (the suite's results file gives Chromium's CPU-seconds: bench/RESULTS-suite.md).
CHROMIUM = Path("/usr/bin/chromium-headless-shell")
PACKAGES = ["chromium-headless-shell", "fonts-noto-color-emoji", "fonts-noto-cjk"]


def start_app(extra_env: dict[str, str] | None = None, shared: bool = False,
              **kwargs) -> tuple[subprocess.Popen, str, float]:
    """The app, with this test process's order of cores (tests/conftest.py): its measuring core is this process's.
    Only for a test marked `owns_app`, or the one app per process the others share (`shared`): each start costs
    the suite seconds."""
    from tests.conftest import RUNNING

    if not shared and RUNNING and not RUNNING[0].get_closest_marker("owns_app"):
        raise AssertionError(f"{RUNNING[0].nodeid} starts an app of its own without the owns_app mark: share the "
                             "process's (tests/app/conftest.py), or say why it needs its own")
    return _start_app({"GE_ALLOWED_CORES_": os.environ["GE_ALLOWED_CORES_"], **(extra_env or {})}, **kwargs)


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def descendants(pid: int) -> set[int]:
    """The live processes under `pid` (a zombie is already gone)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.add(c)
            todo.append(c)
    return found


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def kept_by_this_process(pid: int) -> bool:
    """This process's own multiprocessing helpers, kept until it exits: its resource tracker and its fork server
    (explorer/core/child.py). A child forked from the fork server shows the server's command line, so the parent
    tells them apart."""
    return parent_of(pid) == os.getpid() and any(w in cmdline(pid) for w in (b"resource_tracker", b"forkserver"))


def marked(mark: str) -> set[int]:
    """Live processes whose environment holds `mark` (an orphan is reparented, so no longer a descendant), but
    this process's own helpers (kept until it exits)."""
    found = set()
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            state = Path(env.parent, "stat").read_text().rsplit(")", 1)[1].split()[0]
            ours = kept_by_this_process(int(env.parent.name))
            if mark.encode() in env.read_bytes() and state != "Z" and not ours:
                found.add(int(env.parent.name))
        except OSError:
            continue
    return found


AXE_VERSION = "4.14.1"
AXE_DIR = ROOT / ".cache" / "axe-core"


def _apt_install(*packages: str) -> None:
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise RuntimeError(f"the browser tests need {' '.join(packages)}: run `apt-get install` them as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in ([apt, "update", "-q"], [apt, "install", "-y", "-q", "--no-install-recommends", *packages]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")


def ensure_axe() -> Path:
    """axe-core's browser script, installed from the npm registry (npm from Debian if missing) into .cache/."""
    script = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
    if script.exists():
        return script
    if shutil.which("npm") is None:
        _apt_install("npm")
    done = subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(AXE_DIR),
                           f"axe-core@{AXE_VERSION}"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not script.exists():
        raise RuntimeError(f"npm install axe-core@{AXE_VERSION} failed: {done.stderr.strip()[-500:]}")
    return script


def ensure_chromium() -> str:
    """The path of Debian's chromium, installing it with apt-get if needed; raises with the reason if not."""
    if not CHROMIUM.exists():
        _apt_install(*PACKAGES)
    return str(CHROMIUM)


def source_line(path: str, marker: str) -> str:
    """'path:N' for the first line of the project file `path` that contains `marker`."""
    lines = ROOT.joinpath(path).read_text().splitlines()
    return f"{path}:{next(i + 1 for i, ln in enumerate(lines) if marker in ln)}"


def early_exit_branch() -> str:
    """Where the early-exit model's data-dependent `if` is: the line that breaks the compiled graph."""
    return source_line("models/early_exit.py", "confidence.min()")


__all__ = ["ARGS", "cmdline", "descendants", "early_exit_branch", "ensure_chromium", "marked", "source_line",
           "start_app", "stop_app"]


def autograd_nodes(loss) -> int:
    """An independent count of an autograd graph: every node the loss reaches through next_functions."""
    seen, todo = set(), [loss.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and node not in seen:
            seen.add(node)
            todo += [n for n, _ in node.next_functions]
    return len(seen)


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str) -> CliRun:
    """`python -m explorer ARGS` in this process (its verbs start and stop their own workers as in a shell): the
    exit code and what it printed. The models a `--model FILE` added leave with it."""
    from explorer.cli import main
    from explorer.sources.registry import SOURCES

    before, out, err = dict(SOURCES), io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse's refusals
                code = e.code if isinstance(e.code, int) else 2
    finally:
        os.chdir(cwd)
        SOURCES.clear()
        SOURCES.update(before)
    return CliRun(code, out.getvalue(), err.getvalue())
