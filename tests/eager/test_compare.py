"""Two ways compared in interleaved pairs: the ratio's interval is bootstrapped over the pairs, and a winner is
named only when the whole interval says so."""

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.eager.compare import Comparison, compare, interleaved


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_real_twofold_difference_is_resolved_and_named_the_right_way_round():
    c = compare("slow", lambda: _spin(2e-4), "fast", lambda: _spin(1e-4), 0.3)
    assert c.faster == "fast" and c.pairs >= 8 and len(c.a_ms) == len(c.b_ms)
    assert c.said().startswith("fast is ") and "faster than slow" in c.said()
    flipped = Comparison.of("fast", "slow", c.b_ms, c.a_ms)
    assert flipped.faster == "fast" and flipped.high < 1
    # the interval said is of the speed-up said: above 1 on both ends, whichever side won
    assert f"interval {1 / flipped.high:.2f}-{1 / flipped.low:.2f}x" in flipped.said() and 1 / flipped.high > 1


def test_the_same_work_twice_is_not_called_faster_and_the_noise_is_said():
    c = Comparison.of("a", "b", [1.0, 1.2, 0.9, 1.1, 1.0, 1.3, 0.8, 1.0], [1.1, 1.0, 1.0, 0.9, 1.2, 1.0, 1.0, 1.1])
    assert c.faster is None and c.low < 1 < c.high
    assert c.said().startswith("no difference between a and b resolved at this noise (±")


samples = st.lists(st.tuples(st.floats(0.1, 10.0), st.floats(0.1, 10.0)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(samples, st.integers(0, 3))
def test_a_named_winner_is_never_inside_its_interval_of_the_other(pairs, seed):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    c = Comparison.of("a", "b", a, b, seed=seed)
    assert c.low <= c.high
    if c.faster == "b":
        assert c.low > 1 and "b is" in c.said()
    elif c.faster == "a":
        assert c.high < 1 and "a is" in c.said()
    else:
        assert c.low <= 1 <= c.high and c.said().startswith("no difference")
    assert Comparison.of("a", "b", a, b, seed=seed).low == c.low  # seeded: the same samples, the same interval


def test_several_ways_timed_in_rotated_rounds_pair_up_any_two():
    r = interleaved({"slow": lambda: _spin(3e-4), "mid": lambda: _spin(1.5e-4), "fast": lambda: _spin(5e-5)}, 0.3)
    assert len({len(v) for v in r.ms.values()}) == 1 and len(r.ms["slow"]) >= 8  # one sample of each per round
    assert r.comparison("slow", "fast").faster == "fast" and r.comparison("fast", "mid").faster == "fast"
    m = r.measurement("mid")
    assert m.runs == len(r.ms["mid"]) and m.min_ms <= m.median_ms <= m.max_ms
