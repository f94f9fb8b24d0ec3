"""Every judge that reads a paired comparison, fed random intervals (hypothesis): a model or point is named on a
side (faster, slower, costs) only when its whole interval is on that side, and one whose interval holds 1 is said
to be unresolved; the verdict's kind follows from the sides alone."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.claims import distributed, overhead, padding, speed
from explorer.claims.evidence import CONDITION, HOLDS, NOT_HERE, UNRESOLVED

# an interval and its ratio: low <= ratio <= high, often across 1
intervals = st.tuples(st.floats(0.5, 2.0), st.floats(0.0, 0.6), st.floats(0.0, 1.0)).map(
    lambda t: (t[0], t[0] + t[1] * t[2], t[0] + t[1]))


def _side(low: float, high: float) -> str:
    return "up" if low > 1 else "down" if high < 1 else "none"


def _sections(text: str, headers: dict[str, str], names: list[str], after: str) -> dict[str, set[str]]:
    """For each name, the sides of the headers its mentions (`name` followed by `after`) fall under."""
    marks = sorted((m.start(), side) for h, side in headers.items() for m in re.finditer(re.escape(h), text))
    found: dict[str, set[str]] = {}
    for name in names:
        for m in re.finditer(re.escape(name) + after, text):
            before = [side for pos, side in marks if pos < m.start()]
            found.setdefault(name, set()).add(before[-1] if before else "")
    return found


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.sampled_from(["rnn", "transformer", "early_exit", "tree"]),
                       st.tuples(intervals, st.booleans()), min_size=1))
def test_speed_names_a_side_only_by_the_whole_interval(models):
    x: dict[str, float] = {}
    for m, ((low, ratio, high), ran) in models.items():
        x |= {f"{m}.ran_compiled": float(ran), f"{m}.speedup": ratio, f"{m}.speedup_low": low,
              f"{m}.speedup_high": high, f"{m}.speedup_pairs": 20.0}
    v = speed.judge(x)
    headers = {"every model ran faster compiled": "up", "for ": "up", "slower compiled:": "down",
               "not resolved on this machine today:": "none", "no compiled code ran for": "never"}
    said = _sections(v.why, headers, list(models), r" \d")
    sides = {m: _side(lo, hi) if ran else "never" for m, ((lo, _, hi), ran) in models.items()}
    for m, side in sides.items():
        if side != "never":
            assert said[m] == {side}, (m, side, v.why)
    ups = [m for m, s in sides.items() if s == "up"]
    assert (v.kind == HOLDS) == (bool(ups) and len(ups) == len(sides))
    assert (v.kind == UNRESOLVED) == all(s in ("none", "never") for s in sides.values())


points = st.dictionaries(st.tuples(st.sampled_from(["rnn", "transformer"]), st.sampled_from([1, 16, 256]),
                                   st.sampled_from([4, 32])),
                         st.tuples(intervals, st.floats(0.0, 1.0)), min_size=1)


@settings(max_examples=80, deadline=None)
@given(points)
def test_overhead_names_a_side_only_by_the_whole_interval(grid):
    x: dict[str, float] = {}
    for (model, batch, length), ((low, ratio, high), share) in grid.items():
        key = f"{model}.{batch}x{length}"
        x |= {f"{key}.share": share, f"{key}.speedup": ratio, f"{key}.speedup_low": low, f"{key}.speedup_high": high}
    v = overhead.judge(x)
    listing = v.why.split("; at the largest batch")[0]
    headers = {"eager slower at": "up", "eager faster at": "down", "resolved but under": "small",
               "not resolved at": "none"}

    def side(low: float, ratio: float, high: float) -> str:
        """Past MIN_EFFECT by the interval's near bound: the whole interval, not its point, clears 5%."""
        s = _side(low, high)
        big = low >= 1 + overhead.MIN_EFFECT if s == "up" else high <= 1 / (1 + overhead.MIN_EFFECT)
        return s if s == "none" or big else "small"

    names = {f"{m} {b}x{n}": side(*iv) for (m, b, n), (iv, _) in grid.items()}
    said = _sections(listing, headers, list(names), r" \(")
    assert all(said[p] == {side} for p, side in names.items()), v.why
    sides = set(names.values())
    if sides <= {"none", "small"}:
        assert v.kind == UNRESOLVED
    if "up" not in sides:
        assert v.kind in (NOT_HERE, UNRESOLVED)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.sampled_from(["rnn", "transformer", "early_exit"]), intervals, min_size=1))
def test_padding_names_a_side_only_by_the_whole_interval(models):
    x: dict[str, float] = {}
    for m, (low, ratio, high) in models.items():
        x |= {f"{m}.pad_ms": 10.0 * ratio, f"{m}.pack_ms": 10.0, f"{m}.padded_over_free": ratio,
              f"{m}.padded_over_free_low": low, f"{m}.padded_over_free_high": high, f"{m}.padded_over_free_pairs": 9}
    v = padding.judge(x)
    headers = {"padding-free is faster for": "up", "padded is faster for": "down",
               "not resolved on this machine today for": "none"}
    said = _sections(v.why, headers, list(models), r" \(")
    sides = {m: _side(lo, hi) for m, (lo, _, hi) in models.items()}
    assert all(said[m] == {side} for m, side in sides.items()), v.why
    assert (v.kind == HOLDS) == (set(sides.values()) == {"up"})
    assert (v.kind == CONDITION) == ("up" in sides.values() and set(sides.values()) != {"up"})


@settings(max_examples=60, deadline=None)
@given(intervals)
def test_the_cost_of_find_unused_is_a_cost_only_by_the_whole_interval(cost):
    low, ratio, high = cost
    x = {"depths_differ": 1.0, "plain.raised": 1.0, "plain.grad_error": 1.4, "find_unused.raised": 0.0,
         "find_unused.grad_error": 0.0, "find_unused_cost": ratio, "find_unused_cost_low": low,
         "find_unused_cost_high": high, "find_unused_cost_pairs": 12.0}
    why = distributed.judge(x).why
    word = {"up": "it costs", "down": "it saves", "none": "no cost resolved at this noise"}[_side(low, high)]
    assert word in why and sum(w in why for w in ("it costs", "it saves", "no cost resolved")) == 1
