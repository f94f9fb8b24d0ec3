"""The charts' shared style: what every lab's and claim's chart relies on."""

from explorer.draw.style import iqr_bars, whole_ticks, wrapped


def test_error_bars_never_reach_below_zero():
    bars = iqr_bars([2.0, 10.0], [5.0, 1.0])
    assert bars["arrayminus"] == [2.0, 1.0] and bars["array"] == [5.0, 1.0]


def test_counts_get_whole_ticks_and_long_titles_wrap_between_words():
    assert whole_ticks(3)["dtick"] == 1 and whole_ticks(600)["dtick"] == 100
    title = "every strategy timed on the same batch of sentences"
    lines = wrapped(title, 20).split("<br>")
    assert all(len(line) <= 20 for line in lines) and " ".join(lines) == title
