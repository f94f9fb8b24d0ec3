"""Bounded memory across sessions: at most MAX_LIVE_MODELS built models server-wide, least recently used
evicted first, and a closed tab's model and last run freed at once.

An evicted model costs nothing to get back: models are deterministic for their config (seeded), so the
session simply rebuilds the same weights on its next run."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Protocol


class Releasable(Protocol):
    id: str

    def release_model(self) -> None: ...

    def release(self) -> None: ...


class Residency:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._lru: OrderedDict[str, weakref.ref] = OrderedDict()  # session id -> session, holding a model
        self._clients: dict[str, weakref.ref] = {}  # browser session (Gradio's session hash) -> session

    def __deepcopy__(self, memo: dict) -> Residency:
        return self  # server-wide: a session copied from its factory (as Gradio's State does) shares it

    def touch(self, session: Releasable) -> None:
        """`session` holds a built model and just used it; evict the least recently used beyond capacity."""
        evicted = []
        with self._lock:
            self._lru[session.id] = weakref.ref(session)
            self._lru.move_to_end(session.id)
            while len(self._lru) > self.capacity:
                _, ref = self._lru.popitem(last=False)
                evicted.append(ref())
        for s in evicted:
            if s is not None:
                s.release_model()

    def forget(self, session: Releasable) -> None:
        with self._lock:
            self._lru.pop(session.id, None)

    def attach(self, client: str | None, session: Releasable) -> None:
        """Remember which browser session owns `session`, so closing the tab can free it."""
        if client:
            with self._lock:
                self._clients[client] = weakref.ref(session)

    def close(self, client: str | None) -> bool:
        """The browser session went away: free its session's model and last run. Returns whether it had one."""
        with self._lock:
            ref = self._clients.pop(client or "", None)
        session = ref() if ref else None
        if session is not None:
            session.release()
        return session is not None

    @property
    def live_models(self) -> int:
        with self._lock:
            return sum(1 for ref in self._lru.values() if ref() is not None)
