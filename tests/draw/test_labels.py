"""Node labels kept apart: a label that would cover one placed before it moves to a free side of its node, and one
with no free side is left to the hover text."""

from explorer.draw.labels import SIDES, Spot, placed

PLOT = (600.0, 400.0)


def test_a_label_moves_to_a_free_side_and_the_first_placed_keeps_its_own():
    spots = [Spot(0.0, 0.0, 5, "head", "top center"), Spot(0.01, 0.0, 5, "(loss)", "top center"),
             Spot(100.0, 100.0, 5, "far away", "top center")]  # the data range: 100 units over the plot's 600 px
    assert placed(spots, PLOT) == [("head", "top center"), ("(loss)", "bottom center"), ("far away", "top center")]


def test_a_label_with_no_free_side_is_dropped_and_an_empty_one_takes_no_room():
    crowd = [Spot(0.0, 0.0, 5, f"label {i}", "top center") for i in range(len(SIDES) + 1)]
    out = placed([*crowd, Spot(0.0, 0.0, 5, "", "middle right"), Spot(1000.0, 1000.0, 5, "x", "top center")], PLOT)
    kept = [o for o in out[:len(crowd)] if o[0]]
    assert kept[:2] == [("label 0", "top center"), ("label 1", "bottom center")]  # then the sides beside them
    assert len({side for _, side in kept}) == len(kept) < len(crowd)  # one label a side at most; the rest dropped
    assert ("", "top center") in out[:len(crowd)]
    assert out[-2] == ("", "middle right") and out[-1] == ("x", "top center")


def test_labels_far_apart_in_pixels_keep_their_sides():
    spots = [Spot(float(i), 0.0, 5, "blocks.0", "top center") for i in range(4)]  # 200 px apart
    assert placed(spots, PLOT) == [("blocks.0", "top center")] * 4
