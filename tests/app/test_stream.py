"""The page's stream adapter: a silent run has its last phase said again every tick with the seconds since the
click, an error comes out where it was raised, and closing the stream (a person leaving) closes the run."""

import threading
import time

import pytest

from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.ui.stream import ticking


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
