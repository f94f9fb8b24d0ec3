"""A room as its pages show it: the measured answer's bar marked, even where no answer fell; the address students
join at follows how the teacher reached the server, and says when the room's machines cannot reach it."""

from dataclasses import replace

from explorer.claims.room import Distribution, RoomRun, RoomView
from explorer.views import room
from explorer.views.room import distribution_figure, join_address, room_markdown, runs_figure


def _view(measured, labels=("8-8.5", "8.5-9", "9-9.5"), counts=(2, 0, 1), choices=()) -> RoomView:
    return RoomView("ABCDE", 1, "how many?", choices, "x", False, 3, 3, 8.0, True, measured,
                    Distribution(labels, counts, sum(counts), 8.25))


def test_the_measured_answers_bin_is_marked_where_no_answer_fell_and_not_before_the_reveal():
    fig = distribution_figure(_view(8.7))
    bars, marker = fig.data
    assert list(bars.marker.color) == ["#1f77b4", "#d62728", "#1f77b4"] and list(marker.x) == ["8.5-9"]
    assert "measured: 8.7 x (red)" in fig.layout.title.text and "median 8.25" in fig.layout.title.text
    assert len(distribution_figure(_view(None)).data) == 1  # not measured: the answers alone
    hidden = _view(8.7)
    assert distribution_figure(RoomView(*[*vars(hidden).values()][:9], False, None, None)) is None
    said = room_markdown(_view(8.7))
    assert "Your answer: **8 x**" in said and "**Measured on this server: 8.7 x**" in said
    choice = distribution_figure(_view("b", ("a", "b"), (1, 0), ("a", "b")))
    assert list(choice.data[0].marker.color) == ["#1f77b4", "#d62728"]


def test_students_join_where_the_teacher_reached_the_server_unless_that_is_this_machine_alone(monkeypatch):
    monkeypatch.setattr(room, "lan_address", lambda: "10.1.2.3")  # this machine's address on its network
    assert join_address("class.example.org", "0.0.0.0", 7860, "ABCDE") == ("http://class.example.org/?room=ABCDE", "")
    url, note = join_address("127.0.0.1:7860", "127.0.0.1", 7860, "ABCDE")
    assert url == "http://127.0.0.1:7860/?room=ABCDE" and note.startswith("This server listens on 127.0.0.1 only")
    assert "GRADIO_SERVER_NAME=0.0.0.0" in note
    assert "http://10.1.2.3:7860/?room=ABCDE" in note
    url, note = join_address("localhost:7860", "0.0.0.0", 7860, "ABCDE")  # reachable, but not by that name
    assert (url, note) == ("http://10.1.2.3:7860/?room=ABCDE", "")
    monkeypatch.setattr(room, "lan_address", lambda: None)
    assert join_address("localhost:7860", "0.0.0.0", 7860, "ABCDE")[1].startswith("This machine has no network")


def test_the_rooms_runs_are_plotted_once_revealed_one_series_per_architecture():
    runs = (RoomRun("rnn", 5, 94), RoomRun("rnn", 50, 814), RoomRun("tree", 42, 400))
    fig = runs_figure(replace(_view(8.7), runs=runs))
    assert [(t.name, list(t.x), list(t.y)) for t in fig.data] == [("rnn", [5, 50], [94, 814]), ("tree", [42], [400])]
    assert fig.layout.title.text == "The room's own inputs: 3 runs"
    assert runs_figure(replace(_view(8.7), runs=runs, revealed=False)) is None  # before the reveal
    assert runs_figure(_view(8.7)) is None  # nobody ran their own input
