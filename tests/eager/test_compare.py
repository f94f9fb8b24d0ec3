"""Two ways compared in interleaved pairs: the median pair's ratio with its distribution-free interval, a winner
named only when the whole interval says so, and nothing judged below MIN_PAIRS."""

import math
import random
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.eager.compare import MIN_PAIRS, Comparison, compare, interleaved


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
@given(samples)
def test_a_named_winner_is_never_inside_its_interval_of_the_other(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    c = Comparison.of("a", "b", a, b)
    if len(pairs) < MIN_PAIRS:
        assert c.low is None and c.faster is None
        assert "too few samples to compare" in c.said() or c.interval() == "one sample: no interval"
        return
    assert c.low is not None and c.high is not None and c.low <= c.ratio <= c.high
    if c.faster == "b":
        assert c.low > 1 and "b is" in c.said()
    elif c.faster == "a":
        assert c.high < 1 and "a is" in c.said()
    else:
        assert c.low <= 1 <= c.high and c.said().startswith("no difference")


def test_below_the_minimum_of_pairs_nothing_is_judged_however_far_apart():
    one = Comparison.of("a", "b", [3.0], [1.0])
    assert one.faster is None and one.interval() == "one sample: no interval" and one.noise is None
    few = Comparison.of("a", "b", [3.0, 3.1, 2.9], [1.0, 1.1, 0.9])
    assert few.faster is None and few.said() == f"a and b: too few samples to compare (3; {MIN_PAIRS} needed)"
    assert Comparison.of("a", "b", [3.0] * MIN_PAIRS, [1.0] * MIN_PAIRS).faster == "b"


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["lognormal", "exponential", "spikes"]))
def test_without_a_true_difference_a_verdict_is_no_more_common_than_its_confidence_allows(noise):
    """Both sides drawn from one distribution (no true difference), at every number of pairs from 1 to 40: the share
    of comparisons that name a winner stays at 1 - confidence (5%) or below, with a tolerance for 400 trials."""
    rng = random.Random(noise)

    def draw() -> float:
        if noise == "lognormal":
            return math.exp(rng.gauss(0, 0.2))
        if noise == "exponential":
            return 1 + rng.expovariate(5)
        return 1 + (rng.random() < 0.1) * rng.uniform(1, 5)  # a slow spell now and then

    for n in (1, 2, 3, 5, 8, 12, 20, 40):
        named = sum(Comparison.of("a", "b", [draw() for _ in range(n)], [draw() for _ in range(n)]).resolved
                    for _ in range(400))
        assert named / 400 <= 0.05 + 0.03, (n, named)


def test_several_ways_timed_in_rotated_rounds_pair_up_any_two():
    r = interleaved({"slow": lambda: _spin(3e-4), "mid": lambda: _spin(1.5e-4), "fast": lambda: _spin(5e-5)}, 0.3)
    assert len({len(v) for v in r.ms.values()}) == 1 and len(r.ms["slow"]) >= 8  # one sample of each per round
    assert r.comparison("slow", "fast").faster == "fast" and r.comparison("fast", "mid").faster == "fast"
    m = r.measurement("mid")
    assert m.runs == len(r.ms["mid"]) and m.min_ms <= m.median_ms <= m.max_ms
