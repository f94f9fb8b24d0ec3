"""A class's room on one server: the teacher opens it and gets a short code to project; students join with the code
(no account) and answer each step's prediction; the teacher moves the step and reveals, and every page then shows
the room's answers beside the measured one. Only the teacher's token moves, reveals or downloads. Nothing personal
is kept: a student is a random token, an answer is a number or a choice; a room ends when the teacher has left it
alone for `ttl_s`.

Pure data and a lock: the Lessons tab, the API and the bench drive it (explorer/ui/room.py)."""

from __future__ import annotations

import csv
import io
import math
import secrets
import statistics
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from explorer.claims.lessons import STEPS, step
from explorer.claims.predict import Answer, Prediction
from explorer.core.errors import InputError

CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # none read as another from the back row (no 0/O, 1/I)
CODE_LENGTH = 5
ROOM_TTL_S = 3 * 3600.0  # a room lives this long after its teacher's last action: a double lesson and a break
MAX_ROOMS = 50  # open at once on a server
MAX_STUDENTS = 500  # in one room
ROOM_HOLD_S = 20.0  # a page's question "has the room moved?" is held this long when it has not (then asked again)
ROOM_RETRY_S = 1.0  # a page asks again this soon after its question failed (the server restarting)
BINS = 8  # a number question's distribution: equal-width bins over the answers and the measured value
RUNS_KEPT = 20  # each page's latest runs of its own input, per step: the room's plot, not anyone's history


@dataclass(frozen=True)
class Distribution:
    """The room's answers to one step: a bar per choice, or per bin of numbers (labels in order), and the count."""

    labels: tuple[str, ...]
    counts: tuple[int, ...]
    answers: int
    median: float | None = None  # a number question's


@dataclass(frozen=True)
class RoomRun:
    """One run of a page's own input during a step: the architecture, the input's tokens and the graph's nodes."""

    arch: str
    tokens: int
    nodes: int


@dataclass(frozen=True)
class RoomView:
    """What one page of the room shows now."""

    code: str
    step: int
    question: str
    choices: tuple[str, ...]
    unit: str
    teacher: bool
    students: int
    answered: int  # this step's answers so far
    mine: Answer | None  # this student's answer to this step
    revealed: bool
    measured: Answer | None  # the step's measured answer, once revealed (None: not measured when revealed)
    distribution: Distribution | None  # once revealed
    runs: tuple[RoomRun, ...] = ()  # the room's runs of their own inputs during this step, once revealed


@dataclass
class _Room:
    code: str
    teacher: str
    touched: float
    step: int = 1
    students: set[str] = field(default_factory=set)
    answers: dict[int, dict[str, Answer]] = field(default_factory=dict)  # step -> student -> answer
    revealed: dict[int, Answer | None] = field(default_factory=dict)  # step -> the measured answer at the reveal
    runs: dict[int, dict[str, deque[RoomRun]]] = field(default_factory=dict)  # step -> page token -> its runs
    version: int = 0  # counts the moves every page shows (a step, a reveal): a page asks for it (cheap) and reads
    # the room only when it moved; the teacher's page also when the answers' count did


def _same(a: str, b: str) -> bool:
    return secrets.compare_digest(a.encode(), b.encode())


def distribution(p: Prediction, answers: list[Answer], measured: Answer | None = None) -> Distribution:
    """The answers as bars: one per choice, or BINS equal-width bins spanning the answers and the measured value."""
    if p.choices:
        counts = Counter(answers)
        return Distribution(p.choices, tuple(counts[c] for c in p.choices), len(answers))
    values = [float(a) for a in answers]
    if not values:
        return Distribution((), (), 0)
    span = values + ([float(measured)] if isinstance(measured, float | int) else [])
    lo, hi = min(span), max(span)
    if hi == lo:
        return Distribution((f"{lo:g}",), (len(values),), len(values), statistics.median(values))
    width = (hi - lo) / BINS
    counts = [0] * BINS
    for v in values:
        counts[min(BINS - 1, math.floor((v - lo) / width))] += 1
    labels = tuple(f"{lo + i * width:.3g}-{lo + (i + 1) * width:.3g}" for i in range(BINS))
    return Distribution(labels, tuple(counts), len(values), statistics.median(values))


class Rooms:
    """Every open room of this server, behind one lock (a room's calls are short: a dict's reads and writes)."""

    def __init__(self, ttl_s: float = ROOM_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._rooms: dict[str, _Room] = {}
        self._lock = threading.Lock()
        self._ttl_s = ttl_s
        self._clock = clock
        self._listeners: list[Callable[[str], None]] = []

    def listen(self, moved: Callable[[str], None]) -> None:
        """`moved(code)` is called (from the thread that moved it, outside the lock) whenever room `code`'s pulse
        changed: its step, a reveal, a student joining or answering."""
        self._listeners.append(moved)

    def _moved(self, code: str) -> None:
        for moved in self._listeners:
            moved(code)

    def _expire(self) -> None:
        now = self._clock()
        for code in [c for c, r in self._rooms.items() if now - r.touched > self._ttl_s]:
            del self._rooms[code]

    def _room(self, code: object) -> _Room:
        self._expire()
        key = str(code).strip().upper() if isinstance(code, str) else ""
        room = self._rooms.get(key)
        if room is None:
            said = f"{key!r}" if 0 < len(key) <= CODE_LENGTH else "with that code"  # never a long value echoed
            raise InputError(f"No room {said} is open on this server (a room ends {self._ttl_s / 3600:g} h after "
                             "its teacher's last action): check the code on the board.")
        return room

    def _teachers(self, code: object, token: object) -> _Room:
        room = self._room(code)
        if not isinstance(token, str) or not _same(token, room.teacher):
            raise InputError("Only the room's teacher (the link the room was opened with) can do this.")
        room.touched = self._clock()
        return room

    def teacher(self, code: object, token: object) -> None:
        """Refuses (InputError) anyone but room `code`'s teacher: what only the teacher's page may do."""
        with self._lock:
            self._teachers(code, token)

    def open(self) -> tuple[str, str]:
        """A new room: (its code, the teacher's token)."""
        with self._lock:
            self._expire()
            if len(self._rooms) >= MAX_ROOMS:
                raise InputError(f"This server has {MAX_ROOMS} rooms open: try again when one has ended.")
            code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))
            while code in self._rooms:
                code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))
            token = secrets.token_urlsafe(18)
            self._rooms[code] = _Room(code, token, self._clock())
            return code, token

    def join(self, code: object) -> str:
        """A student's token in room `code`."""
        with self._lock:
            room = self._room(code)
            if len(room.students) >= MAX_STUDENTS:
                raise InputError(f"Room {room.code} is full ({MAX_STUDENTS} students).")
            student = secrets.token_urlsafe(12)
            room.students.add(student)
        self._moved(room.code)
        return student

    def answer(self, code: object, student: object, text: object) -> Answer:
        """A student's answer to the room's current step (again replaces it), until the teacher reveals."""
        with self._lock:
            room = self._room(code)
            if not isinstance(student, str) or student not in room.students:
                raise InputError("Join the room first (its code is on the board).")
            if room.step in room.revealed:
                raise InputError("The answer to this step has been revealed: wait for the next step.")
            value = STEPS[room.step - 1].predict.parse(text)
            room.answers.setdefault(room.step, {})[student] = value
        self._moved(room.code)
        return value

    def go(self, code: object, teacher: object, number: object) -> None:
        """The teacher moves the room to step `number` (a whole number, or its digits)."""
        if isinstance(number, str) and number.strip().isdigit():
            number = int(number)
        if isinstance(number, bool) or not isinstance(number, int):
            raise InputError(f"step must be a whole number from 1 to {len(STEPS)}; got {str(number)[:20]!r}")
        with self._lock:
            room = self._teachers(code, teacher)
            step(number)  # refuses a step the lesson has not
            room.step = number
            room.version += 1
        self._moved(room.code)

    def reveal(self, code: object, teacher: object, numbers_of: Callable[[str], dict[str, float] | None]) -> None:
        """The teacher reveals the current step: its measured answer read from its claim's numbers as they are now
        (`numbers_of(claim id)`, None when the claim has no result on this server) and kept so, whatever a later
        re-measure says."""
        with self._lock:
            room = self._teachers(code, teacher)
            s = STEPS[room.step - 1]
            numbers = numbers_of(s.claim)
            room.revealed[room.step] = None if numbers is None else s.predict.truth(numbers)
            room.version += 1
        self._moved(room.code)

    def ran(self, code: str, who: str, run: RoomRun) -> None:
        """A page of room `code` (the teacher's or a student's token) ran its own input in the Playground during the
        room's step: kept for the room's plot (RUNS_KEPT per page and step). A room that ended keeps nothing."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None or not (who in room.students or _same(who, room.teacher)):
                return
            room.runs.setdefault(room.step, {}).setdefault(who, deque(maxlen=RUNS_KEPT)).append(run)

    def pulse(self, code: object) -> tuple[int, int, int] | None:
        """(how many times room `code` moved step or revealed, students joined, answers to its step; None: no such
        room open): what a page watches: a student's reads the room when the first moved, the teacher's when any
        did."""
        with self._lock:
            room = self._rooms.get(code.strip().upper()) if isinstance(code, str) else None
            if room is None or self._clock() - room.touched > self._ttl_s:
                return None
            return room.version, len(room.students), len(room.answers.get(room.step, {}))

    def view(self, code: object, who: object) -> RoomView:
        """What the page of `who` (the teacher's token or a student's) shows now."""
        with self._lock:
            room = self._room(code)
            teacher = isinstance(who, str) and _same(who, room.teacher)
            if not teacher and (not isinstance(who, str) or who not in room.students):
                raise InputError("Join the room first (its code is on the board).")
            p = STEPS[room.step - 1].predict
            answers = room.answers.get(room.step, {})
            shown = room.step in room.revealed
            measured = room.revealed.get(room.step)
            return RoomView(room.code, room.step, p.question, p.choices, p.unit, teacher, len(room.students),
                            len(answers), None if teacher else answers.get(who),  # type: ignore[call-overload]
                            shown, measured if shown else None,
                            distribution(p, list(answers.values()), measured) if shown else None,
                            tuple(r for runs in room.runs.get(room.step, {}).values() for r in runs) if shown else ())

    def csv(self, code: object, teacher: object) -> str:
        """Every answered step's answers, counted (no student in it), with the measured answer where revealed."""
        with self._lock:
            room = self._teachers(code, teacher)
            out = io.StringIO()
            w = csv.writer(out)
            w.writerow(["step", "question", "answer", "count", "measured"])
            for number, answers in sorted(room.answers.items()):
                measured = room.revealed.get(number, "")
                for value, n in sorted(Counter(answers.values()).items(), key=lambda kv: str(kv[0])):
                    w.writerow([number, STEPS[number - 1].predict.question, value, n,
                                "" if measured is None else measured])
            return out.getvalue()
