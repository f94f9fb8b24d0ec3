"""timing.measure itself: blocks sized from a warm-up call, pinned threads, the lock held, honest units."""

import os
import time

import torch

from explorer.core.limits import THREADS
from explorer.core.machine import MEASURE_CORES, OTHER_CORES
from explorer.eager import timing
from explorer.eager.timing import MIN_BLOCKS, Measurement, measure


def test_every_call_is_counted_in_blocks_under_the_pinned_threads_and_the_lock():
    calls, threads, locked = [], set(), set()

    def fn():
        calls.append(1)
        threads.add(torch.get_num_threads())
        locked.add(timing.CORES.busy)
        time.sleep(0.002)

    m = measure("sleep", fn, min_run_time=0.05)
    assert len(calls) == 1 + m.runs * m.calls_per_run  # one warm-up call, then whole blocks
    assert m.runs >= MIN_BLOCKS and m.threads == THREADS and threads == {THREADS}
    assert locked == {1}  # the timing holds its core: no other timing runs on it meanwhile


def test_figures_are_milliseconds_per_call_with_their_spread():
    m = measure("sleep", lambda: time.sleep(0.003), min_run_time=0.05)
    assert m.median_ms >= 3.0  # a sleep is never shorter than asked: per call, in ms (not per block, not s)
    assert m.min_ms <= m.median_ms <= m.max_ms and m.iqr_ms >= 0


def test_a_figure_whose_spread_rivals_it_says_it_is_not_to_be_read():
    steady = Measurement("a", 3.215, 0.1, 3.1, 3.4, 3, 1, 1)
    wild = Measurement("a", 3.215, 111.681, 3.1, 200.0, 3, 1, 1)  # the card the issue saw, without a warning
    assert "noisy" not in steady.spread() and wild.spread().endswith(": too noisy to read")


def test_a_call_longer_than_the_budget_still_gives_the_minimum_number_of_blocks():
    m = measure("slow", lambda: time.sleep(0.02), min_run_time=0.001)
    assert m.runs == MIN_BLOCKS and m.calls_per_run == 1


def test_a_timing_runs_on_the_measuring_core_and_gives_the_thread_its_cores_back():
    before = os.sched_getaffinity(0)
    m = measure("spin", lambda: sum(range(1000)), min_run_time=0.01)
    assert len(m.cores) == 1 and set(m.cores) <= MEASURE_CORES and m.start_s < m.end_s
    assert os.sched_getaffinity(0) == before
    if len(before) >= 2:
        assert not MEASURE_CORES & OTHER_CORES


def test_timings_past_their_bound_stop_with_one_block_and_say_so():
    """No block starts past the deadline (a deadline already passed: one block, whatever the machine's speed), and
    the figure's spread says it was stopped; without a deadline the blocks asked for are all timed."""
    import time as clock

    from explorer.eager.timing import measure

    stopped = measure("forward", lambda: sum(range(1000)), 1.0, min_blocks=5, deadline=clock.monotonic() - 1)
    assert stopped.runs == 1 and stopped.stopped and "stopped at GE_MAX_RUN_S" in stopped.spread()
    whole = measure("forward", lambda: sum(range(1000)), 0.01, min_blocks=5)
    assert whole.runs >= 5 and not whole.stopped and "stopped" not in whole.spread()
