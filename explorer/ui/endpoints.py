"""The HTTP API's own endpoints (beyond the UI's events): `/inspect`, `/claim`, one per lab made from its spec
(`explorer.api.endpoint`), and a class room's (`/room_open`, `/room_join`, ...): named, typed parameters; a refused
value is a one-line error, never an empty one."""

from __future__ import annotations

import functools
import inspect as inspect_module
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TypeVar

import gradio as gr

from explorer import api
from explorer.core.errors import USER_ERRORS
from explorer.core.paths import sanitize, sanitized
from explorer.core.queues import Queue
from explorer.labs.contract import LabContext
from explorer.labs.registry import LABS
from explorer.server import CLAIM_BOARD, EXPORTS, ROOMS, claim_numbers, concurrency
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


# A class's room (explorer/claims/room.py), for a room's own tools and the bench's simulated students: each call is a
# dict's read or write, so none waits in a queue.
def room_open() -> dict:
    """A new room: its `code` (students join with it) and the `teacher` token (it moves, reveals and downloads)."""
    code, teacher = ROOMS.open()
    return {"code": code, "teacher": teacher}


def room_join(code: str) -> dict:
    """A student's token in room `code`, and the room as the student's page shows it."""
    student = ROOMS.join(code)
    return {"student": student, **asdict(ROOMS.view(code, student))}


def room_answer(code: str, student: str, answer: str) -> dict:
    """The student's prediction for the room's current step (a number or one of its choices)."""
    ROOMS.answer(code, student, answer)
    return asdict(ROOMS.view(code, student))


def room_view(code: str, token: str) -> dict:
    """The room as the page of `token` (the teacher's or a student's) shows it now."""
    return asdict(ROOMS.view(code, token))


def room_step(code: str, teacher: str, step: int) -> dict:
    """The teacher moves the room to lesson step `step`."""
    ROOMS.go(code, teacher, step)
    return asdict(ROOMS.view(code, teacher))


def room_reveal(code: str, teacher: str) -> dict:
    """The teacher reveals the current step: the room's answers and the answer this server measured."""
    ROOMS.reveal(code, teacher, claim_numbers)
    return asdict(ROOMS.view(code, teacher))


ROOM_CALLS = (room_open, room_join, room_answer, room_view, room_step, room_reveal)


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
    for fn in ROOM_CALLS:
        gr.api(refusing(fn), api_name=fn.__name__, queue=False)
