"""The bucket planner: the least-cost boundaries on small histograms, against every choice of boundaries."""

import itertools
import random

import pytest

from explorer.labs.optimize.planner import Costs, plan_of, planned, powers_of_two


def _brute(lengths: list[int], compile_s: float, token_s: float) -> float:
    distinct = sorted(set(lengths))
    below = distinct[:-1]  # the longest length is always a boundary
    return min(plan_of(lengths, [*chosen, distinct[-1]]).cost(Costs.flat(compile_s, token_s))
               for k in range(len(below) + 1) for chosen in itertools.combinations(below, k))


@pytest.mark.parametrize("seed", range(12))
def test_the_plan_costs_no_more_than_any_other_choice_of_boundaries(seed):
    rng = random.Random(seed)
    lengths = [rng.randint(1, 40) for _ in range(rng.randint(1, 14))]
    compile_s, token_s = rng.choice([0.0, 0.01, 0.5, 5.0]), rng.choice([1e-4, 1e-3])
    plan = planned(lengths, Costs.flat(compile_s, token_s))
    assert plan.cost(Costs.flat(compile_s, token_s)) == pytest.approx(_brute(lengths, compile_s, token_s))
    assert all(plan.bucket(n) >= n for n in lengths) and plan.boundaries[-1] == max(lengths)


def test_compiles_that_grow_with_the_length_are_priced_at_each_boundary():
    costs = Costs(8, 1.0, 120, 15.0, 1e-3)  # the unrolled RNN: 1 s at 8 tokens, 15 s at 120
    assert costs.compile_s(8) == 1.0 and costs.compile_s(64) == pytest.approx(8.0) and costs.compile_s(2) == 1.0
    lengths = [8] * 50 + [120]
    assert planned(lengths, costs).boundaries == (8, 120)  # a bucket at 8 costs 1 s, not the longest's 15
    assert planned(lengths, Costs.flat(15.0, 1e-3)).boundaries == (120,)  # 5.6 s of pads < 15 s
    assert plan_of(lengths, (8, 120)).cost(costs) == pytest.approx(16.0 + 1e-3 * (8 * 50 + 120))


@pytest.mark.parametrize("seed", range(6))
def test_the_plan_is_least_cost_with_compiles_priced_by_length(seed):
    rng = random.Random(seed)
    lengths = [rng.randint(1, 40) for _ in range(rng.randint(1, 12))]
    costs = Costs(1, rng.choice([0.0, 0.1]), 40, rng.choice([0.5, 4.0]), 1e-3)
    distinct = sorted(set(lengths))
    brute = min(plan_of(lengths, [*chosen, distinct[-1]]).cost(costs)
                for k in range(len(distinct)) for chosen in itertools.combinations(distinct[:-1], k))
    assert planned(lengths, costs).cost(costs) == pytest.approx(brute)


def test_free_compiles_give_a_bucket_per_length_and_dear_ones_a_single_bucket():
    lengths = [3, 3, 7, 12, 12, 12, 30]
    assert planned(lengths, Costs.flat(0.0, 1e-3)).boundaries == (3, 7, 12, 30)
    assert planned(lengths, Costs.flat(1e6, 1e-3)).boundaries == (30,)
    assert planned(lengths, Costs.flat(1e6, 1e-3)).padded_share == pytest.approx(1 - sum(lengths) / (30 * 7))


def test_powers_of_two_pad_to_the_next_power_and_stop_at_the_longest():
    plan = powers_of_two([3, 5, 9, 12])
    assert plan.boundaries == (4, 8, 12) and [plan.bucket(n) for n in (3, 5, 9, 12)] == [4, 8, 12, 12]
    with pytest.raises(ValueError, match="at least one request"):
        planned([], Costs.flat(1.0, 1.0))


def test_its_endpoint_keeps_its_parameters_and_their_order():
    """The HTTP API as documented (docs/cli.md): the names and their order are a promise to callers."""
    from explorer.api import endpoint_parameters
    from explorer.labs.registry import LABS

    assert [p.name for p in endpoint_parameters(LABS["optimize"])] == [
        "model", "config_json", "lengths_from", "n", "min_len", "max_len", "seed", "lengths", "strategies",
        "backend", "bound_s"]
