"""The one entry point of every process the app spawns (compile, measuring, deployment and multi-process workers,
and the training ranks): it ties the child's life to its parent before anything heavy is imported.

Why its own module, light on purpose: multiprocessing's spawn unpickles a child's target and arguments, importing
their modules (torch: seconds), before the target runs. A parent killed during those seconds would leave a child
that finishes its imports and then runs, unowned, at full CPU. Here the target travels as a name and its
arguments as bytes, so the child watches its parent first, then imports the engine; the UI is never imported.

Where a child starts (`context`): a worker is forked from multiprocessing's fork server, a process that has
imported torch, dynamo and inductor, frozen what they made (explorer/core/preloaded.py) and run nothing (no torch
state to inherit), so a worker is ready in a tenth of a second instead of the ~2.3 CPU-seconds a spawned interpreter
spends importing them again (137 worker starts in one run of the test suite). A child whose environment must be
set before torch is imported (TORCH_TRACE, OPENBLAS_NUM_THREADS) is spawned. Either way it gets its parent's
environment as it is at the start, not as it was when the fork server started, and it exits as soon as its parent
does: the watch waits on a pidfd of the parent, which the kernel wakes at the parent's exit, a SIGKILL included.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import multiprocessing.context
import os
import pickle
import select
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any

PRELOADED = ("torch", "torch._dynamo", "torch._inductor.compile_fx")  # what the fork server imports once
FROZEN = "explorer.core.preloaded"  # imported last: what the preload made, frozen before the first fork


def context(fresh: bool = False) -> mp.context.BaseContext:
    """How a child starts: forked from the fork server (see the module's docstring), or spawned when `fresh`."""
    if fresh:
        return mp.get_context("spawn")
    server = mp.get_context("forkserver")
    server.set_forkserver_preload([__name__, *PRELOADED, FROZEN])  # (read once, when the server starts)
    return server


def spawn_args(target: Any, *args: Any, handles: tuple[Any, ...] = (), env: Mapping[str, str] | None = None
               ) -> tuple[Any, ...]:
    """The `args` of a `Process(target=run, ...)` that calls `target(*handles, *args)` once the child is tied to
    this process. `handles` (pipes) go as multiprocessing sends them; `args` as bytes, unpickled after. `env`: set
    in the child's environment on top of this process's (before the target's module is imported: a spawned child
    imports torch after it, and torch reads TORCH_TRACE when it is imported)."""
    return (os.getpid(), f"{target.__module__}:{target.__qualname__}", pickle.dumps(args),
            {**os.environ, **(env or {})}, *handles)


def run(parent: int, target: str, payload: bytes, env: dict[str, str], *handles: Any) -> None:
    """In the child: die with the parent, take its environment (and `env`), then import `target` and call it."""
    # A Ctrl-C in a terminal, or a Jupyter kernel's interrupt or shutdown, reaches the whole process group: the
    # parent decides (it stops its workers, or the watch below ends them with it); a worker interrupted mid-job
    # only printed a KeyboardInterrupt's traceback, or lost the job.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # (its parent may be the fork server: the process to die with is the one that asked for it)
        watched = os.pidfd_open(parent)
    except ProcessLookupError:  # the parent died before this child could watch it: nobody will read its work
        os._exit(1)
    _WATCH.stop_r, _WATCH.stop_w = os.pipe()
    _WATCH.thread = threading.Thread(target=_watch, args=(watched,), daemon=True, name="parent-watch")
    _WATCH.thread.start()
    os.environ.clear()
    os.environ.update(env)
    module, name = target.split(":")
    fn = importlib.import_module(module)
    for part in name.split("."):
        fn = getattr(fn, part)
    fn(*handles, *pickle.loads(payload))


class _Watch:
    thread: threading.Thread | None = None
    stop_r = stop_w = -1  # a pipe: written to end the watch


_WATCH = _Watch()


def _watch(parent: int) -> None:
    """Wait (no polling) for the parent to exit, then exit; or for stop_watching."""
    ready, _, _ = select.select([parent, _WATCH.stop_r], [], [])
    if parent in ready:
        os._exit(1)  # the parent is gone
    os.close(parent)


def stop_watching() -> None:
    """End the parent's watch (before a process walls itself in: a thread started earlier stays outside the walls,
    and this one runs Python a visitor's code could replace). Its job connection's end then says the parent went."""
    if _WATCH.thread is not None:
        os.write(_WATCH.stop_w, b"x")
        tid = _WATCH.thread.native_id
        _WATCH.thread.join()
        # join returns as the thread's Python state ends; its kernel thread exits a moment later, and the walls
        # count the kernel's threads (explorer/core/confine.py): wait for it (a bound, should it never go)
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/self/task/{tid}") and time.monotonic() < deadline:
            time.sleep(0.001)
        os.close(_WATCH.stop_r)
        os.close(_WATCH.stop_w)
        _WATCH.thread = None
