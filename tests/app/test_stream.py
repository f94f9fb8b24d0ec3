"""The page's stream adapter: a silent run has its last phase said again every tick with the seconds since the
click and how long the last run of its kind took here, an error comes out where it was raised, and closing the
stream (a person leaving) closes the run."""

import threading
import time

import pytest

from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.ui.stream import LAST_S, streamed, ticking


def test_a_silent_run_is_said_again_every_tick_with_the_seconds_since_it_began():
    def run():
        yield Progress.said("compiling the forward")
        time.sleep(0.35)  # a worker busy compiling, saying nothing
        yield "result"

    items = list(ticking(run(), every=0.1))
    phases = [i for i in items if isinstance(i, Progress)]
    assert items[-1] == "result" and len(phases) >= 3  # the phase, then again while silent
    assert phases[0].phase == "Starting…" and {p.phase for p in phases[1:]} == {"compiling the forward"}
    assert [p.elapsed_s for p in phases] == sorted(p.elapsed_s for p in phases) and phases[-1].elapsed_s >= 0.25


def test_an_error_comes_out_where_it_was_raised():
    def run():
        yield Progress.said("checking")
        raise InputError("this input is refused")

    with pytest.raises(InputError, match="refused"):
        list(ticking(run(), every=0.1))


def test_closing_the_stream_closes_the_run_and_its_thread():
    closed = threading.Event()

    def run():
        try:
            while True:
                yield Progress.said("a step")
                time.sleep(0.02)
        finally:
            closed.set()  # where a run cancels its worker's job

    stream = ticking(run(), every=0.1)
    next(stream)
    stream.close()
    assert closed.wait(2.0)
    time.sleep(0.3)
    assert not any(t.name == "ge-ticking" for t in threading.enumerate())


def test_the_status_says_how_long_the_last_run_of_its_kind_took_here_and_a_refused_one_is_not_counted():
    def run(refuse: bool = False):
        yield Progress.said("routing")
        time.sleep(0.15)
        if refuse:
            raise InputError("no")
        yield "done"

    LAST_S.pop("a lab", None)
    first = [u["status"] for u in streamed(run(), lambda item: {"out": item}, "status", "Cannot", kind="a lab")
             if "status" in u]
    assert first[0] == "Starting… (0 s)" and "last one" not in " ".join(first)  # nothing to go by yet
    took = LAST_S["a lab"]
    assert took >= 0.15  # the run's own sleep, at least
    second = [u["status"] for u in streamed(run(True), lambda item: {}, "status", "Cannot", kind="a lab")]
    assert second[0] == f"Starting… (0 s; the last one took {took:.0f} s on this server)"
    assert second[-1] == "**Cannot**: no" and LAST_S["a lab"] == took  # a refusal is not a run's duration
    given = [u["status"] for u in streamed(run(), lambda item: {}, "status", "Cannot", took=48.0) if "status" in u]
    assert given[0] == "Starting… (0 s; the last one took 48 s on this server)"
