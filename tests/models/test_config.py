"""models/config.py: what a knob must declare."""

import dataclasses

import pytest

from models.config import knob, knobs


def test_a_knob_of_numbers_declares_how_many_it_takes():
    """Its refusal names the bound (a knob without one once said 'takes at most None numbers')."""
    @dataclasses.dataclass(frozen=True)
    class Unbounded:
        lengths: tuple[int, ...] = knob((8,), "lengths", min=1, max=512)

    with pytest.raises(ValueError, match=r"Unbounded.lengths: a knob of numbers declares how many it takes \(most=\)"):
        knobs(Unbounded)
