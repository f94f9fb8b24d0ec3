"""Where a server process spends its CPU, by phase: py-spy samples it from outside (no change to the app, no
cost inside it), and each sampled stack is charged to the phase of its innermost frame that names one.

`record(pid, seconds)` starts py-spy on a running process; `Phases.of(path)` reads its raw (collapsed) stacks.
py-spy samples only threads that are running (not idle in a lock or a socket), so a phase's share of samples is
its share of the process's CPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# (phase, what its frames' files look like), innermost match wins: plotly's validation called from a view is
# "building figures", JSON written by Gradio is "serialising", torch under the capture is "capture".
PHASES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((name, re.compile(pattern)) for name, pattern in (
    ("serialising (JSON)", r"orjson|[(/]json/|encoder\.py|jsonable_encoder|_json\.py|to_json"),
    ("building figures (plotly)", r"[(/]plotly/|[(/]_plotly_utils/"),
    ("graph layout (igraph, labels)", r"[(/]igraph/|explorer/draw/(layout|tree_layout|labels)\.py"),
    ("drawing the graph", r"explorer/draw/"),
    ("capture (autograd graph)", r"explorer/eager/(capture|graph)\.py"),
    ("cards, history, views", r"explorer/views/"),
    ("tables (pandas)", r"[(/]pandas/"),
    ("sessions, queue, IPC", r"explorer/serving/|explorer/runs/|[(/]multiprocessing/|pickle"),
    ("Gradio events and state", r"[(/]gradio/|[(/]gradio_client/"),
    ("HTTP server, event loop", r"[(/](uvicorn|starlette|fastapi|anyio|asyncio|h11|httpx|httpcore)/"),
    ("torch (elsewhere)", r"[(/]torch/"),
))
OTHER = "other"
# A thread waiting in one of these is idle, though py-spy without stopping the process may sample it as running.
IDLE = re.compile(r"^(EpollSelector\.select \(selectors|Condition\.wait \(threading|Queue\.get \(queue|"
                  r"sleep \(asyncio/tasks|Event\.wait \(threading)")


def py_spy() -> str | None:
    """py-spy's executable: on the PATH, or beside this interpreter (a virtual environment not activated)."""
    beside = Path(sys.executable).with_name("py-spy")
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def record(pid: int, seconds: float, out: Path, rate: int = 100) -> subprocess.Popen:
    """py-spy sampling `pid` for `seconds` into `out` (raw collapsed stacks), at the lowest priority and without
    stopping the process (`--nonblocking`): the server runs as it would unobserved."""
    return subprocess.Popen(["nice", "-n", "19", py_spy() or "py-spy", "record", "--pid", str(pid), "--duration",
                             str(max(1, round(seconds))), "--rate", str(rate), "--format", "raw", "--nonblocking",
                             "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def phase_of(stack: str) -> str | None:
    """The phase of one collapsed stack (`outer;...;inner`): that of its innermost frame that names one; None for
    a thread waiting."""
    frames = stack.split(";")
    if IDLE.match(frames[-1]):
        return None
    for frame in reversed(frames):
        for name, pattern in PHASES:
            if pattern.search(frame):
                return name
    return OTHER


@dataclass(frozen=True)
class Phases:
    """Samples per phase of one recording (each sample is one running thread at one instant)."""

    samples: dict[str, int]

    @classmethod
    def of(cls, path: Path) -> Phases:
        counts: Counter[str] = Counter()
        for line in path.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            phase = phase_of(stack) if stack and n.isdigit() else None
            if phase:
                counts[phase] += int(n)
        return cls(dict(counts))

    @property
    def total(self) -> int:
        return sum(self.samples.values())

    def table(self, cpu_s: float, interactions: int) -> list[str]:
        """Markdown rows: each phase's share of the process's CPU and its CPU seconds per interaction."""
        rows = ["| phase | share of the server's CPU | CPU ms per interaction |", "|---|---:|---:|"]
        per = 1000 * cpu_s / max(interactions, 1)
        for name, n in sorted(self.samples.items(), key=lambda kv: -kv[1]):
            share = n / max(self.total, 1)
            rows.append(f"| {name} | {100 * share:.1f}% | {share * per:.0f} |")
        rows.append(f"| all ({self.total} samples) | 100% | {per:.0f} |")
        return rows
