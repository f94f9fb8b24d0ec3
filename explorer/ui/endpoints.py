"""The HTTP API's own endpoints (beyond the UI's events): `/inspect`, `/claim`, and one per lab made from its spec
(`explorer.api.endpoint`): named, typed parameters; a refused value is a one-line error, never an empty one."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import gradio as gr

from explorer import api
from explorer.compile.protocol import CompileFailure
from explorer.core.errors import USER_ERRORS
from explorer.core.paths import sanitize, sanitized
from explorer.core.queues import Queue
from explorer.labs.contract import LabContext
from explorer.labs.registry import LABS
from explorer.server import CLAIM_BOARD, EXPORTS, concurrency
from explorer.serving.downloads import PREFIX
from explorer.ui.stream import failure_line

R = TypeVar("R")


def refusing(fn: Callable[..., R]) -> Callable[..., R]:
    """`fn` at the HTTP edge: a user's error or a stopped worker is its one line; anything else is logged with an
    id, and the line names it; neither names a path of the server. The signature (and so the endpoint's
    parameters) is `fn`'s."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> R:
        try:
            return fn(*args, **kwargs)
        except (*USER_ERRORS, CompileFailure) as e:
            raise gr.Error(sanitize(str(e)), print_exception=False) from None
        except Exception:
            raise gr.Error(failure_line(f"/{fn.__name__}"), print_exception=False) from None
    return call


def answering(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """`fn`'s report with no path of the server in it: a file offered for download is named by its address
    (explorer/serving/downloads.py), a traceback's paths are relative."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return sanitized(fn(*args, **kwargs), (str(EXPORTS.path), PREFIX))
    return call


def inspect(model: str, config_json: str, text: str, compare: str = "", backend: str = "", dynamic: str = "auto",
            mark_dynamic: bool = False, fullgraph: bool = False) -> dict:
    return api.inspect_run(model, config_json, text, compare, backend, dynamic, mark_dynamic, fullgraph)


def claim(claim: str, again: bool = False) -> dict:
    return api.claim(CLAIM_BOARD, claim, again)


inspect.__doc__, claim.__doc__ = api.inspect_run.__doc__, api.claim.__doc__


def add_endpoints() -> None:
    measure = Queue.MEASURE
    gr.api(refusing(answering(inspect)), api_name="inspect", concurrency_id=measure.value,
           concurrency_limit=concurrency(measure))
    for spec in LABS.values():
        fn = api.endpoint(spec, lambda: LabContext(api.workers(), EXPORTS.job_dir))
        gr.api(refusing(answering(fn)), api_name=spec.name, concurrency_id=spec.queue.value,
               concurrency_limit=concurrency(spec.queue))
    gr.api(refusing(answering(claim)), api_name="claim", concurrency_id=Queue.CLAIMS.value, concurrency_limit=1)
