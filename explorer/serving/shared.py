"""What sessions share: results that depend only on (model, config, text), computed once; timings measured
moments ago, reused for a short while and labelled with their age; and one measurement of an input at a time.

Why the first holds: every model is built seeded from its config, so its weights, and with them the graph an
input builds (the early exit's decision, the tree's shape), the bytes saved for backward and the profiler's
allocation peaks, depend on (model, config, text) alone (tests/serving/test_shared.py checks it per model).
Timings do not: they move with load and with the machine, so they are reused for `GE_TIMING_REUSE_S` at most."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from explorer.core.limits import CACHED_RUNS, TIMING_REUSE_S
from explorer.eager.capture import Capture
from explorer.eager.lines import LinesRan
from explorer.eager.memory import MemoryPeaks
from explorer.serving.pool import Timed
from models.config import config_dict

V = TypeVar("V")


def run_key(model: str, config: Any, text: str) -> str:
    return json.dumps([model, config_dict(config), text], sort_keys=True)


class LRU(Generic[V]):
    """A bounded map, least recently used dropped first; safe across server threads."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)


@dataclass
class Fixed:
    """What (model, config, text) determines, with what its one capture took (the estimate of a run's cost)."""

    capture: Capture
    params: int
    param_bytes: int
    memory: MemoryPeaks | None = None  # the profiler's peaks, once measured


@dataclass(frozen=True)
class Sourced:
    """Timings and where they come from: measured for this request, or reused from `age_s` ago."""

    timed: Timed
    age_s: float = 0.0
    reused: bool = False
    notice: str | None = None  # the queue's: how long it waited, whether load cut the budget
    unprofiled: bool = False  # the turn allowed no memory profile (a long queue)
    own: bool = False  # reused from this very session's earlier run

    def label(self) -> str | None:
        said = " ".join(filter(None, [self.timed.retried, self.notice]))
        if not self.reused:
            return said or None
        whose = "this session's earlier run" if self.own else "another session"
        return (f"Timings reused: measured {self.age_s:.0f} s ago for {whose} on the same model, architecture and "
                "text (press *Measure again* for a fresh one).")


class RecentTimings:
    """Timings by run key and thread count, for `max_age_s`; and who is measuring which key right now, so that a
    second request for it waits for that measurement instead of queueing a copy."""

    def __init__(self, capacity: int, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._done: LRU[tuple[Timed, float, str]] = LRU(capacity)  # timings, when, for which session
        self._running: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def recent(self, key: str, session: str = "") -> Sourced | None:
        hit = self._done.get(key)
        if hit is None:
            return None
        age = time.monotonic() - hit[1]
        return Sourced(hit[0], age, reused=True, own=bool(session) and hit[2] == session) \
            if age <= self.max_age_s else None

    def put(self, key: str, timed: Timed, session: str = "") -> None:
        self._done.put(key, (timed, time.monotonic(), session))

    def begin(self, key: str) -> threading.Event | None:
        """Claim the measurement of `key`: None if this caller is to measure it (then call `end`), else the
        event that is set when the one measuring it ends."""
        with self._lock:
            running = self._running.get(key)
            if running is None:
                self._running[key] = threading.Event()
            return running

    def end(self, key: str) -> None:
        with self._lock:
            self._running.pop(key).set()


class Once:
    """One computation per key at a time: a second caller waits for the first, then finds its result cached
    (thirty students opening one link capture its graph once)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, list[int]]] = {}  # key -> (lock, [callers])

    @contextmanager
    def __call__(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, callers = self._locks.setdefault(key, (threading.Lock(), [0]))
            callers[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._guard:
                callers[0] -= 1
                if not callers[0]:
                    del self._locks[key]


FIXED: LRU[Fixed] = LRU(int(CACHED_RUNS))
CAPTURING = Once()
LINES: LRU[LinesRan] = LRU(int(CACHED_RUNS))  # the lines of the model's Python each input ran, once asked
RECENT = RecentTimings(int(CACHED_RUNS), TIMING_REUSE_S)
