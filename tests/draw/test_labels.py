"""Node labels kept apart: a label that would cover one placed before it moves to a free side of its node, and one
with no free side is left to the hover text."""

from explorer.draw.labels import SIDES, Spot, placed

PLOT = (600.0, 400.0)


def _inside(spots: list[Spot], left: float, right: float) -> list[tuple[str, str]]:
    """`placed` with the data range widened by two unlabelled spots at `left` and `right`: the spots sit away from
    the figure's edges, so that only their neighbours move their labels."""
    return placed([*spots, Spot(left, 0.0, 5, "", "top center"), Spot(right, 0.0, 5, "", "top center")], PLOT)[:-2]


def test_a_label_moves_to_a_free_side_and_the_first_placed_keeps_its_own():
    spots = [Spot(0.0, 0.0, 5, "head", "top center"), Spot(0.01, 0.0, 5, "(loss)", "top center"),
             Spot(100.0, 100.0, 5, "far away", "top center")]  # the data range: 300 units over the plot's 600 px
    assert _inside(spots, -100.0, 200.0) == [("head", "top center"), ("(loss)", "bottom center"),
                                             ("far away", "top center")]


def test_a_label_with_no_free_side_is_dropped_and_an_empty_one_takes_no_room():
    crowd = [Spot(0.0, 0.0, 5, f"label {i}", "top center") for i in range(len(SIDES) + 1)]
    out = _inside([*crowd, Spot(0.0, 0.0, 5, "", "middle right"), Spot(1000.0, 1000.0, 5, "x", "top center")],
                  -1000.0, 2000.0)
    kept = [o for o in out[:len(crowd)] if o[0]]
    assert kept[:2] == [("label 0", "top center"), ("label 1", "bottom center")]  # then the sides beside them
    assert len({side for _, side in kept}) == len(kept) < len(crowd)  # one label a side at most; the rest dropped
    assert ("", "top center") in out[:len(crowd)]
    assert out[-2] == ("", "middle right") and out[-1] == ("x", "top center")


def test_labels_far_apart_in_pixels_keep_their_sides():
    spots = [Spot(float(i), 0.0, 5, "blocks.0", "top center") for i in range(4)]  # 120 px apart
    assert _inside(spots, -1.0, 4.0) == [("blocks.0", "top center")] * 4


def test_a_label_at_the_figures_edge_turns_inwards_instead_of_being_cut():
    """The unrolled RNN's first step, centred under the leftmost node, was cut to "ayers.0.fwd, step 0"."""
    spots = [Spot(0.0, 0.0, 5, "layers.0.fwd, step 0", "bottom center"), Spot(50.0, 0.0, 5, "x", "top center"),
             Spot(100.0, 0.0, 5, "layers.0.fwd, step 41", "bottom center")]
    assert placed(spots, PLOT) == [("layers.0.fwd, step 0", "bottom right"), ("x", "top center"),
                                   ("layers.0.fwd, step 41", "bottom left")]
