"""A Playground run, orchestrated: one at a time per session, reconfigure, skip an unchanged input, capture the
graph (at once, outside the measurement queue), plan, wait for the queue, time. It yields typed results; the view
(`explorer/views/playground.py`) draws them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from explorer.core.inputs import empty_message
from explorer.core.progress import Progress
from explorer.runs.session import Captured, RunResult, Session
from explorer.serving.plan import Plan, plan
from explorer.serving.timings import InProcess, Timer, timings


@dataclass(frozen=True)
class Planned:
    """A run's first stage: the graph its input built, and how its timings are planned (or why they are not)."""

    captured: Captured
    plan: Plan


def run(session: Session, model: str, text: str, compare: str, values: dict[str, Any],
           timer: Timer | None = None, fresh: bool = False,
           keyed: bool = False) -> Iterator[Progress | Planned | RunResult]:
    """Reconfigure if needed, capture and yield the new graph at once (it does not wait in the measurement queue),
    wait for the queue (yielding progress), time, and yield the run. One run at a time per session; an input
    identical to the latest run's (a blur, a release, a link and the edit it causes) yields a message instead of a
    new run, unless `fresh` (then its timings are measured again, never reused), and so does an empty box: a pause
    while a person retypes, not an error (no error toast, no red badges over the previous run's figures). Timings
    run on `timer` (the server's measurement pool; default: in this thread). `keyed`: the text came from
    keystrokes (see Session.typing)."""
    if text == "":
        still = f" The figures shown are still run {session.last.number}'s." if session.last else ""
        yield Progress.said(f"**Not run**: {empty_message()}{still}")
        return
    with session.run_lock:
        session.configure(model, values)  # validation first: a bad config never waits in the queue
        if session.is_latest(text, compare) and not fresh:
            yield Progress.said(f"Run {session.last.number} is this input on this architecture: its figures are the "
                                "ones shown.")
            return
        yield from _measured_run(session, text, compare, timer or InProcess(), fresh, keyed)


def _measured_run(session: Session, text: str, compare: str, timer: Timer,
                  fresh: bool, keyed: bool) -> Iterator[Progress | Planned | RunResult]:
    # The graph does not wait in the measurement queue: capturing it takes milliseconds on the server's own core
    # (timings run in their own processes, on their own cores), and an input any session ran before is cached.
    captured = session.capture(text, compare, keyed)
    p = plan(captured.capture)
    yield Planned(captured, p)
    if not p.timed:
        return
    sourced = None
    for step in timings(captured.key, lambda turn: session.job(captured, p.in_turn(turn)), timer, fresh,
                        estimate_s=p.estimate_s, session=session.id):
        if isinstance(step, Progress):
            yield step
        else:
            sourced = step
    assert sourced is not None
    yield session.time_run(captured, sourced, note=p.note)
