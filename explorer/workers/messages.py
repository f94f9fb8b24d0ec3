"""What crosses the pipe between the app and a worker process (explorer/workers/process.py), each way: one dataclass
per message, matched by type (never a tag string)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from explorer.workers.protocol import Job


@dataclass(frozen=True)
class Ready:
    """Worker -> app: imports done; from here on, job time is compile time."""


@dataclass(frozen=True)
class Phase:
    """Worker -> app: what the job is doing now."""

    text: str


@dataclass(frozen=True)
class Acquire:
    """Worker -> app: hold measuring cores for a timing ("one", or "every" one)."""

    which: str


@dataclass(frozen=True)
class Granted:
    """App -> worker: the cores held for it."""

    cores: Any


@dataclass(frozen=True)
class Release:
    """Worker -> app: the timing is done; give the cores back."""


@dataclass(frozen=True)
class Done:
    """Worker -> app: the job's reply."""

    reply: Any


@dataclass(frozen=True)
class Failed:
    """Worker -> app: the job raised, in a way the worker survived."""

    error: str


@dataclass(frozen=True)
class RunJob:
    """App -> worker: run this job."""

    job: Job


@dataclass(frozen=True)
class Stop:
    """App -> worker: exit (sent when idle)."""
