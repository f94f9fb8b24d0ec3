"""The one adapter between a run and the page: a `Progress | result` stream becomes the status line (what it does,
the seconds since the click, and how long the same kind of run last took here), each result the outputs its `show`
names, and a failure one line (never a traceback)."""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any

import gradio as gr

from explorer.core.errors import USER_ERRORS
from explorer.core.paths import sanitize
from explorer.core.progress import Progress
from explorer.workers.protocol import WorkerFailure

log = logging.getLogger("graph_explorer")
Updates = dict[Any, Any]  # {component: value}: only what changes


def failure_line(what: str) -> str:
    """An unexpected failure, logged with an id under `what`; the line the person sees names the id."""
    ref = uuid.uuid4().hex[:8]
    log.exception("%s: unexpected error %s", what, ref)
    return (f"it failed inside the model (error {ref} in the server's log); nothing else changed. Try another "
            "architecture or input.")


TICK_S = 1.0  # a run that says nothing for this long has its last phase said again, with the seconds since the click
_END = object()


def ticking(items: Iterator[Progress | Any], every: float = TICK_S) -> Iterator[Progress | Any]:
    """`items`, run in a thread of its own; while it says nothing for `every` seconds, its last phase again, with the
    seconds since it started (a worker's compile or a rank's step can be silent for minutes). Progress comes out
    with `elapsed_s` since the start; an exception comes out where it was raised; closing this closes `items`."""
    handoff: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def hand(item: object, error: BaseException | None = None) -> None:
        while not stop.is_set():  # the consumer may be gone: never block on it for good
            try:
                handoff.put((item, error), timeout=0.2)
                return
            except queue.Full:
                continue

    def produce() -> None:
        error: BaseException | None = None
        try:
            for item in items:
                hand(item)
                if stop.is_set():
                    break
        except BaseException as e:  # handed to the consumer, raised there
            error = e
        finally:
            if stop.is_set() and hasattr(items, "close"):
                items.close()  # type: ignore[union-attr]  # its `finally` cancels its jobs
        hand(_END, error)

    start = time.monotonic()
    context = contextvars.copy_context()  # the request's context, for whatever in `items` reads it
    threading.Thread(target=context.run, args=(produce,), name="ge-ticking", daemon=True).start()
    last = "Starting…"
    try:
        yield Progress(0.0, last)  # at once: the click is answered before the run says anything
        while True:
            try:
                item, error = handoff.get(timeout=every)
            except queue.Empty:
                yield Progress(time.monotonic() - start, last)
                continue
            if error is not None:
                raise error
            if item is _END:
                return
            if isinstance(item, Progress):
                last = item.phase
                yield Progress(time.monotonic() - start, last)
            else:
                yield item
    finally:
        stop.set()  # the producer stops at its next item and closes `items`


LAST_S: dict[str, float] = {}  # how long each kind of run last took on this server: the next one's estimate


def streamed(items: Iterator[Progress | Any], show: Callable[[Any], Updates], status: gr.components.Component,
             refused: str, toast: bool = False, kind: str | None = None,
             took: float | None = None) -> Generator[Updates, None, bool]:
    """Progress to `status`, said again every second with the seconds since the click while the run is silent,
    and how long the last run of its `kind` took on this server (or `took`, its caller's figure); each result to
    `show`'s outputs. A refused input or a stopped worker is said in `status` under the heading `refused`, or as a
    toast when `toast` (the Playground, whose runs take a second or two, keeps its figures and status for the last
    good run, and is not ticked). Returns whether the run finished (and then records its seconds for `kind`)."""
    took = LAST_S.get(kind) if took is None and kind else took
    start = time.monotonic()
    try:
        for item in items if toast else ticking(items):
            if isinstance(item, Progress):
                yield {status: item.phase if toast else f"{item.phase} ({_seconds(item.elapsed_s, took)})"}
            else:
                yield show(item)
    except (*USER_ERRORS, WorkerFailure) as e:
        said = sanitize(str(e))  # no path of the server
        if toast and isinstance(e, WorkerFailure):  # the measurement process died twice or timed out
            raise gr.Error(f"The graph above is this input's; its timing stopped: {said}", title="Timing stopped",
                           print_exception=False) from None
        if toast:
            raise gr.Error(said, title=refused, print_exception=False) from None
        if isinstance(e, WorkerFailure):
            gr.Warning(said)
        yield {status: f"**{refused}**: {said}"}
        return False
    except Exception:
        line = failure_line(refused)
        if toast:
            raise gr.Error(line, print_exception=False) from None
        yield {status: f"**{refused}**: {line}"}
        return False
    if kind:
        LAST_S[kind] = time.monotonic() - start
    return True


def _seconds(elapsed: float, took: float | None) -> str:
    """'12 s', or '12 s; the last one took 48 s on this server': the estimate is a measured run's seconds."""
    return f"{elapsed:.0f} s" + (f"; the last one took {took:.0f} s on this server" if took else "")
