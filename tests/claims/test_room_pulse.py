"""A room's pulse (explorer/ui/room_pulse.py) in front of a stand-in app: held while the room shows what the page has
seen, answered when it moves (from another thread, as Gradio's handlers move it), after the hold otherwise."""

import threading

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from explorer.claims.room import Rooms
from explorer.ui import room_pulse
from explorer.ui.room_pulse import RoomPulse


@pytest.fixture
def pulsing():
    rooms = Rooms()
    app = Starlette(routes=[Route("/{path:path}", lambda _: PlainTextResponse("the app"), methods=["GET", "POST"])])
    middleware = RoomPulse(app, rooms)
    with TestClient(middleware) as client:  # one event loop for every request, as a server has
        yield rooms, middleware, client


def _asked(client: TestClient, path: str) -> tuple[threading.Thread, dict]:
    out: dict = {}
    asking = threading.Thread(target=lambda: out.update(response=client.get(path)))
    asking.start()
    return asking, out


def _held(middleware: RoomPulse, code: str, n: int = 1) -> None:
    """Until `n` pulses for `code` are held (waiting for the room to move); a hang detector, not a timing."""
    tick = threading.Event()
    for _ in range(6000):
        if len(middleware._waiting.get(code, ())) >= n:
            return
        tick.wait(0.01)
    raise AssertionError(f"{n} pulse(s) for {code} never held")


def test_a_pulse_is_held_while_the_room_shows_what_the_page_has_seen_and_answered_when_it_moves(pulsing, monkeypatch):
    rooms, middleware, client = pulsing
    monkeypatch.setattr(room_pulse, "ROOM_HOLD_S", 90.0)  # answered by the move (within 60 s), not by the hold
    code, teacher = rooms.open()
    version = client.get(f"/room/{code.lower()}/pulse").json()["version"]  # nothing seen: answered at once
    asking, out = _asked(client, f"/room/{code}/pulse?seen={version}")
    _held(middleware, code)
    assert asking.is_alive()
    rooms.go(code, teacher, 3)  # the teacher moves the step (this thread, as a Gradio handler's)
    asking.join(60)
    assert not asking.is_alive()
    assert out["response"].json() == {"version": version + 1, "joined": 0, "answered": 0}
    assert out["response"].headers["cache-control"] == "no-store"
    assert not middleware._waiting  # nothing left held


def test_the_teachers_page_is_answered_on_a_join_a_students_is_held_until_the_hold_ends(pulsing, monkeypatch):
    rooms, middleware, client = pulsing
    code, _ = rooms.open()
    version = rooms.pulse(code)[0]
    monkeypatch.setattr(room_pulse, "ROOM_HOLD_S", 1.0)
    teachers, teacher_out = _asked(client, f"/room/{code}/pulse?counts=1&seen={version}/0/0")
    students, student_out = _asked(client, f"/room/{code}/pulse?seen={version}")
    _held(middleware, code, 2)
    rooms.join(code)
    teachers.join(30)
    assert teacher_out["response"].json() == {"version": version, "joined": 1, "answered": 0}
    students.join(30)  # woken by the join, held again (its page shows no count), answered as it is at the hold's end
    assert student_out["response"].json()["version"] == version


def test_a_room_not_open_is_a_404_at_once_and_every_other_path_goes_on_to_the_app(pulsing):
    _, _, client = pulsing
    gone = client.get("/room/NOPE2/pulse?seen=4")
    assert gone.status_code == 404 and "no such room" in gone.json()["error"]
    assert client.get("/room/NOPE2").text == "the app"
    assert client.post("/room/NOPE2/pulse").text == "the app"
