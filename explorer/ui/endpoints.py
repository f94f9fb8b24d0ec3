"""The HTTP API's own endpoints (beyond the UI's events): `/inspect`, `/claim`, and one per lab made from its spec
(`explorer.api.endpoint`): named, typed parameters; a refused value is a one-line error, never an empty one."""

from __future__ import annotations

import functools
import inspect as inspect_module
import re
from collections.abc import Callable
from typing import Any, TypeVar

import gradio as gr

from explorer import api
from explorer.core.errors import USER_ERRORS
from explorer.core.paths import sanitize, sanitized
from explorer.core.queues import Queue
from explorer.labs.contract import LabContext
from explorer.labs.registry import LABS
from explorer.server import CLAIM_BOARD, EXPORTS, concurrency
from explorer.ui.downloads import PREFIX
from explorer.ui.internals import check_before_queueing
from explorer.ui.stream import failure_line
from explorer.workers.protocol import WorkerFailure

R = TypeVar("R")


def refusing(fn: Callable[..., R]) -> Callable[..., R]:
    """`fn` at the HTTP edge: a user's error or a stopped worker is its one line; anything else is logged with an
    id, and the line names it; neither names a path of the server. The signature (and so the endpoint's
    parameters) is `fn`'s."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> R:
        try:
            return fn(*args, **kwargs)
        except (*USER_ERRORS, WorkerFailure) as e:
            raise gr.Error(sanitize(str(e)), print_exception=False) from None
        except Exception:
            raise gr.Error(failure_line(f"/{fn.__name__}"), print_exception=False) from None
    return call


def answering(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """`fn`'s report with no path of the server in it: a file offered for download is named by its address
    (explorer.ui.downloads.py), a traceback's paths are relative."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return sanitized(fn(*args, **kwargs), (str(EXPORTS.path), PREFIX))
    return call


def inspect(model: str, config_json: str, text: str, compare: str = "", backend: str = "", dynamic: str = "auto",
            mark_dynamic: bool = False, fullgraph: bool = False) -> dict:
    return api.inspect_run(model, config_json, text, compare, backend, dynamic, mark_dynamic, fullgraph)


def claim(claim: str, again: bool = False, model: str = "", config_json: str = "{}") -> dict:
    return api.claim(CLAIM_BOARD, claim, again, model, config_json)


inspect.__doc__, claim.__doc__ = api.inspect_run.__doc__, api.claim.__doc__


def _add(endpoint: api.Endpoint, queue: str, limit: int) -> None:
    dep = gr.api(refusing(answering(endpoint.run)), api_name=endpoint.name, concurrency_id=queue,
                 concurrency_limit=limit)
    names = list(inspect_module.signature(endpoint.check).parameters)

    def validator(*values: Any) -> list[dict[str, Any]]:
        """Every value valid, or the one the refusal names marked with its line (gradio_client raises it as a
        ValidationError naming the parameter; a raw HTTP call gets a 422 listing it)."""
        try:
            endpoint.check(*values)
            line, bad = "", None
        except USER_ERRORS as e:
            line = sanitize(str(e))
            bad = _named(line, names)
        except Exception:
            line, bad = failure_line(f"/{endpoint.name} check"), names[0]
        return [gr.validate(name != bad, line if name == bad else "") for name in names[:len(values)]]

    check_before_queueing(dep, validator)  # not behind a long run in its queue, and before any work


_SAID = {"config_json": "config"}  # how a refusal names a parameter, where not by its own name


def _named(line: str, names: list[str]) -> str:
    """The parameter a refusal is about: the one it starts with, else the first it names, else the config (an
    architecture past the server's limits), else the first."""
    for pattern in (r"^(unknown |each of )?{}\b", r"\b{}\b"):
        if found := [n for n in names if re.search(pattern.format(_SAID.get(n, n)), line)]:
            return found[0]
    return "config_json" if "config_json" in names else names[0]


def add_endpoints() -> None:
    _add(api.Endpoint("inspect", inspect, api.inspect_check), Queue.MEASURE.value, concurrency(Queue.MEASURE.value))
    for spec in LABS.values():
        _add(api.endpoint(spec, lambda: LabContext(api.workers(), EXPORTS.job_dir)), spec.waits_in,
             concurrency(spec.waits_in))
    _add(api.Endpoint("claim", claim, api.claim_check), Queue.CLAIMS.value, 1)
