"""The bucket planner: the least-cost boundaries on small histograms, against every choice of boundaries."""

import itertools
import random

import pytest

from explorer.labs.optimize.planner import plan_of, planned, powers_of_two


def _brute(lengths: list[int], compile_s: float, token_s: float) -> float:
    distinct = sorted(set(lengths))
    below = distinct[:-1]  # the longest length is always a boundary
    return min(plan_of(lengths, [*chosen, distinct[-1]]).cost(compile_s, token_s)
               for k in range(len(below) + 1) for chosen in itertools.combinations(below, k))


@pytest.mark.parametrize("seed", range(12))
def test_the_plan_costs_no_more_than_any_other_choice_of_boundaries(seed):
    rng = random.Random(seed)
    lengths = [rng.randint(1, 40) for _ in range(rng.randint(1, 14))]
    compile_s, token_s = rng.choice([0.0, 0.01, 0.5, 5.0]), rng.choice([1e-4, 1e-3])
    plan = planned(lengths, compile_s, token_s)
    assert plan.cost(compile_s, token_s) == pytest.approx(_brute(lengths, compile_s, token_s))
    assert all(plan.bucket(n) >= n for n in lengths) and plan.boundaries[-1] == max(lengths)


def test_free_compiles_give_a_bucket_per_length_and_dear_ones_a_single_bucket():
    lengths = [3, 3, 7, 12, 12, 12, 30]
    assert planned(lengths, 0.0, 1e-3).boundaries == (3, 7, 12, 30)
    assert planned(lengths, 1e6, 1e-3).boundaries == (30,)
    assert planned(lengths, 1e6, 1e-3).padded_share == pytest.approx(1 - sum(lengths) / (30 * 7))


def test_powers_of_two_pad_to_the_next_power_and_stop_at_the_longest():
    plan = powers_of_two([3, 5, 9, 12])
    assert plan.boundaries == (4, 8, 12) and [plan.bucket(n) for n in (3, 5, 9, 12)] == [4, 8, 12, 12]
    with pytest.raises(ValueError, match="at least one request"):
        planned([], 1.0, 1.0)
