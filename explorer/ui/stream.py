"""The one adapter between a run and the page: a `Progress | result` stream becomes the status line and the
progress bar, each result the outputs its `show` names, and a failure one line (never a traceback)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import gradio as gr

from explorer.compile.protocol import CompileFailure
from explorer.core.errors import USER_ERRORS
from explorer.core.paths import sanitize
from explorer.core.progress import Progress

log = logging.getLogger("graph_explorer")
Updates = dict[Any, Any]  # {component: value}: only what changes


def failure_line(what: str) -> str:
    """An unexpected failure, logged with an id under `what`; the line the person sees names the id."""
    ref = uuid.uuid4().hex[:8]
    log.exception("%s: unexpected error %s", what, ref)
    return (f"it failed inside the model (error {ref} in the server's log); nothing else changed. Try another "
            "architecture or input.")


def streamed(items: Iterator[Progress | Any], show: Callable[[Any], Updates], status: gr.components.Component,
             progress: gr.Progress | None, refused: str, toast: bool = False) -> Iterator[Updates]:
    """Progress to `status` (and the progress bar), each result to `show`'s outputs. A refused input or a stopped
    worker is said in `status` under the heading `refused`, or as a toast when `toast` (the Playground keeps its
    figures and status for the last good run)."""
    try:
        for item in items:
            if isinstance(item, Progress):
                if progress is not None:
                    progress(None, desc=item.phase)
                yield {status: item.phase}
            else:
                yield show(item)
    except (*USER_ERRORS, CompileFailure) as e:
        said = sanitize(str(e))  # no path of the server
        if toast and isinstance(e, CompileFailure):  # the measurement process died twice or timed out
            raise gr.Error(f"The graph above is this input's; its timing stopped: {said}", title="Timing stopped",
                           print_exception=False) from None
        if toast:
            raise gr.Error(said, title=refused, print_exception=False) from None
        if isinstance(e, CompileFailure):
            gr.Warning(said)
        yield {status: f"**{refused}**: {said}"}
    except Exception:
        line = failure_line(refused)
        if toast:
            raise gr.Error(line, print_exception=False) from None
        yield {status: f"**{refused}**: {line}"}
