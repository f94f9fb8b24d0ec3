"""Whose experiment runs next on the claims' board (explorer/claims/turns.py): one a person asked for at a time, a
room's teacher's ahead of every visitor's waiting, the background's never waited for."""

import threading

import pytest

import explorer.claims.board as board_module
from explorer.claims.board import CLAIMS, ClaimBoard
from explorer.claims.room import Rooms
from explorer.claims.turns import Turn, Turns
from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.workers.protocol import Workers

A, B, C, D = list(CLAIMS)[:4]


class Experiments:
    """Stand-in experiments: each says it started, then runs until released."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release = {c: threading.Event() for c in CLAIMS}

    def __call__(self, c, workers, model=None):
        self.started.append(c.id)
        yield Progress.said(f"{c.id}: running")
        assert self.release[c.id].wait(120)


@pytest.fixture
def board(monkeypatch):
    experiments = Experiments()
    monkeypatch.setattr(board_module, "run_claim", experiments)
    b = ClaimBoard(ttl_s=3600, quick=True, wait_tick_s=0.01)
    b.experiments = experiments
    return b


def _asks(board: ClaimBoard, claim_id: str, turn: Turn) -> tuple[threading.Thread, list]:
    said: list = []
    t = threading.Thread(target=lambda: said.extend(board.run(claim_id, Workers({}), turn=turn)))
    t.start()
    return t, said


def _until(done) -> None:
    tick = threading.Event()
    for _ in range(12_000):  # a hang detector (2 min), not a timing
        if done():
            return
        tick.wait(0.01)
    raise AssertionError("never happened")


def test_a_rooms_teachers_experiment_runs_before_every_visitor_waiting_and_each_is_told_why(board):
    running, _ = _asks(board, A, Turn.VISITOR)
    _until(lambda: board.experiments.started == [A])
    visitor, visitor_said = _asks(board, B, Turn.VISITOR)  # came first
    _until(lambda: len(visitor_said) >= 2)
    teacher, teacher_said = _asks(board, C, Turn.FIRST)
    _until(lambda: len(teacher_said) >= 2)
    assert board.experiments.started == [A]  # one at a time
    assert f"Another experiment is running on this server ({A}: {A}: running): this one starts after it" in (
        visitor_said[-1].phase)
    assert "yours runs next, ahead of any visitor's" in teacher_said[-1].phase
    board.experiments.release[A].set()
    _until(lambda: len(board.experiments.started) == 2)
    assert board.experiments.started == [A, C]  # the teacher's, though the visitor waited longer
    board.experiments.release[C].set()
    _until(lambda: len(board.experiments.started) == 3)
    assert board.experiments.started == [A, C, B]
    board.experiments.release[B].set()
    for t in (running, visitor, teacher):
        t.join(120)
    assert board.turns.holder is None


def test_a_free_turn_goes_to_a_teacher_in_line_never_to_a_visitor_while_one_is():
    turns = Turns()
    with turns.line(Turn.VISITOR) as visitor:
        assert visitor(A, 0.0) and turns.holder == A  # no one held it
    with turns.line(Turn.VISITOR) as visitor, turns.line(Turn.FIRST) as teacher:
        assert not teacher(B, 0.0)  # one at a time
        turns.give()
        assert not visitor(C, 0.0)  # free, but a teacher is in line
        assert teacher(B, 0.0) and turns.holder == B
    turns.give()
    with turns.line(Turn.VISITOR) as visitor:  # the teacher left the line
        assert visitor(C, 0.0)


def test_the_servers_own_runs_take_no_turn_and_a_visitor_who_leaves_gives_the_turn_back(board):
    running, _ = _asks(board, A, Turn.VISITOR)
    _until(lambda: board.experiments.started == [A])
    background, _ = _asks(board, B, Turn.BACKGROUND)  # the warm-up's: runs beside it, never waited for
    _until(lambda: board.experiments.started == [A, B])
    board.experiments.release[B].set()
    background.join(120)
    leaving = board.run(C, Workers({}))
    assert "this one starts after it" in next(leaving).phase
    leaving.close()  # the page closed while waiting
    board.experiments.release[A].set()
    running.join(120)
    assert board.turns.holder is None
    alone, _ = _asks(board, D, Turn.FIRST)
    _until(lambda: board.experiments.started[-1:] == [D])  # nobody ahead: at once
    board.experiments.release[D].set()
    alone.join(120)


def test_only_the_rooms_teacher_passes_the_teachers_check():
    rooms = Rooms()
    code, teacher = rooms.open()
    student = rooms.join(code)
    rooms.teacher(code, teacher)
    for who in (student, "", None, teacher + "x"):
        with pytest.raises(InputError, match="Only the room's teacher"):
            rooms.teacher(code, who)
