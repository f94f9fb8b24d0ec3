"""The one entry point of every process the app spawns (compile, measuring, deployment and multi-process workers,
and the training ranks): it ties the child's life to its parent before anything heavy is imported.

Why its own module, light on purpose: multiprocessing's spawn unpickles a child's target and arguments, importing
their modules (torch: seconds), before the target runs. A parent killed during those seconds would leave a child
that finishes its imports and then runs, unowned, at full CPU. Here the target travels as a name and its
arguments as bytes, so the child watches its parent first, then imports the engine; the UI is never imported.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import pickle
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any

_PR_SET_PDEATHSIG = 1
WATCH_S = 0.2  # how often a child checks that its parent still lives (a parent's SIGKILL ends it this soon)


def spawn_args(target: Any, *args: Any, handles: tuple[Any, ...] = (), tied_to_thread: bool = False,
               env: Mapping[str, str] | None = None) -> tuple[Any, ...]:
    """The `args` of a spawned `Process(target=run, ...)` that calls `target(*handles, *args)` once the child is
    tied to this process. `handles` (pipes) go as multiprocessing sends them; `args` as bytes, unpickled after.
    `tied_to_thread`: also have the kernel kill the child when the calling thread ends (PR_SET_PDEATHSIG follows
    the thread that started it: only for a thread that outlives its children). `env`: set in the child's
    environment before the target's module is imported (torch reads TORCH_TRACE when it is imported)."""
    return (os.getpid(), f"{target.__module__}:{target.__qualname__}", pickle.dumps(args), tied_to_thread,
            dict(env or {}), *handles)


def run(parent: int, target: str, payload: bytes, tied_to_thread: bool, env: dict[str, str], *handles: Any) -> None:
    """In the child: die with the parent, set `env`, then import `target` and call it."""
    if tied_to_thread:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before this child could watch it: nobody will read its work
        os._exit(1)
    _WATCH.thread = threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watch")
    _WATCH.thread.start()
    os.environ.update(env)
    module, name = target.split(":")
    fn = importlib.import_module(module)
    for part in name.split("."):
        fn = getattr(fn, part)
    fn(*handles, *pickle.loads(payload))


class _Watch:
    thread: threading.Thread | None = None
    stop = threading.Event()


_WATCH = _Watch()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        if _WATCH.stop.wait(WATCH_S):
            return
    os._exit(1)  # reparented: the parent is gone


def stop_watching() -> None:
    """End the parent's watch (before a process walls itself in: a thread started earlier stays outside the walls,
    and this one runs Python a visitor's code could replace). Its job connection's end then says the parent went."""
    _WATCH.stop.set()
    if _WATCH.thread is not None:
        tid = _WATCH.thread.native_id
        _WATCH.thread.join()
        # join returns as the thread's Python state ends; its kernel thread exits a moment later, and the walls
        # count the kernel's threads (explorer/core/confine.py): wait for it (a bound, should it never go)
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/self/task/{tid}") and time.monotonic() < deadline:
            time.sleep(0.001)
