"""A class's room under a full class: `python -m bench.room [--students 100]` -> bench/RESULTS-room.md.

Starts the app, opens a room as its teacher (the room's API endpoints) and has `--students` simulated students'
pages join it, each speaking Gradio's protocol as a browser's page does, in its own session: the page's load event
with `?room=CODE`, then, whenever the room's pulse (held until the room moves) says it moved, the page's refresh
event, and the page's own event for a prediction. Meanwhile a visitor keeps the Playground busy (an /inspect of a
new input, back to back). For each of `--steps` steps the teacher moves the room, every student answers at a random
moment within ANSWER_WINDOW_S, then the teacher reveals. Read: each answer's round trip, the reveal's (the teacher's
call), how long after the reveal each student's page showed it (the pulse's answer and the refresh included), each
refresh's round trip, and the server's CPU seconds over the run. The goal (issue #50): answer and reveal p95 within
1 s."""

from __future__ import annotations

import json
import random
import secrets
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.appserver import start_app, stop_app
from bench.common import measured_by, parser
from bench.cpu_per_test import tree_cpu, used
from explorer.claims.lessons import STEPS
from explorer.claims.room import ROOM_HOLD_S
from explorer.ui.room import REFRESH_ID, SEND_ID

STUDENTS = 100
STEPS_RUN = 3
ROUNDS = 3  # each on a fresh app: the figures move between starts (and the VM's fast and slow modes)
ANSWER_WINDOW_S = 5.0
GOAL_S = 1.0


def call(url: str, name: str, *data: object) -> dict:
    """One un-queued API endpoint call by name: its result, or RuntimeError with the line."""
    request = urllib.request.Request(f"{url}gradio_api/run/{name}", data=json.dumps({"data": list(data)}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        body = json.loads(r.read())
    if "data" not in body:
        raise RuntimeError(body)
    return body["data"][0]


def _timed(fn, *args) -> tuple[float, dict]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def _answer(p, rng: random.Random) -> str:
    return rng.choice(p.choices) if p.choices else str(rng.randint(int(p.low), int(min(p.high, 50))))


def pulse(url: str, code: str, seen: str = "") -> str:
    """The room's moves (a step, a reveal) once they are not `seen`: what a student's page waits for."""
    with urllib.request.urlopen(f"{url}room/{code}/pulse?seen={seen}", timeout=ROOM_HOLD_S + 30) as r:
        return str(json.loads(r.read())["version"])


@dataclass(frozen=True)
class Events:
    """A room page's events, by the numbers the page calls them by (from the page's config)."""

    load: int  # `?room=CODE` puts the page in the room (queued, as the page's load events are)
    load_inputs: int  # how many values it takes (the browser's kept tokens, then the page's States)
    refresh: int  # what the pulse presses when the room moved (un-queued)
    send: int  # the student's prediction (un-queued)
    answer: tuple[int, int]  # the send event's inputs that carry the answer: (choice, number)
    plot: int  # where in the refresh's outputs the room's answers' plot is

    @classmethod
    def of(cls, url: str) -> Events:
        config = json.loads(urllib.request.urlopen(f"{url}config", timeout=60).read())
        by_elem = {c["props"].get("elem_id"): c["id"] for c in config["components"] if c.get("props")}
        deps = config["dependencies"]

        def triggered_by(elem_id: str) -> int:
            return next(i for i, d in enumerate(deps) if [by_elem[elem_id], "click"] in d["targets"])

        refresh, send = triggered_by(REFRESH_ID), triggered_by(SEND_ID)
        load = next(i for i, d in enumerate(deps) if d["api_name"] == "open_room")
        kinds = {c["id"]: c["type"] for c in config["components"]}
        return cls(load, len(deps[load]["inputs"]), refresh, send, tuple(i for i, c in enumerate(deps[send]["inputs"])  # type: ignore[arg-type]
                                              if kinds[c] in ("radio", "textbox")),
                   next(i for i, c in enumerate(deps[refresh]["outputs"]) if kinds[c] == "plot"))


class Page:
    """A student's page, speaking Gradio's protocol as the browser does, in its own session: the page's load event
    with `?room=CODE` (over the queue), then its refresh and its prediction by event number (un-queued)."""

    def __init__(self, url: str, code: str, events: Events) -> None:
        self.url, self.code, self.events = url, code, events
        self.session = secrets.token_hex(8)

    def open(self) -> None:
        body = {"data": [{}] + [None] * (self.events.load_inputs - 1), "fn_index": self.events.load,
                "session_hash": self.session, "event_data": None, "trigger_id": None}
        request = urllib.request.Request(f"{self.url}gradio_api/queue/join?room={self.code}",
                                         data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=60).read()
        with urllib.request.urlopen(f"{self.url}gradio_api/queue/data?session_hash={self.session}", timeout=120) as r:
            for line in r:
                if line.startswith(b"data: ") and json.loads(line[6:]).get("msg") == "process_completed":
                    return

    def _run(self, fn_index: int, data: list) -> list:
        body = {"data": data, "fn_index": fn_index, "session_hash": self.session, "event_data": None}
        request = urllib.request.Request(f"{self.url}gradio_api/run/predict", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            out = json.loads(r.read())
        if "data" not in out:
            raise RuntimeError(out)
        return out["data"]

    def refresh(self) -> bool:
        """The page's refresh: whether it now shows the step revealed (the room's answers' plot showing)."""
        plot = self._run(self.events.refresh, [None] * 4)
        shown = plot[self.events.plot] if len(plot) > self.events.plot else None
        return isinstance(shown, dict) and shown.get("visible") is True

    def answer(self, text: str, choice: bool) -> None:
        """Sends `text` as the page's choice (a choice question) or its number."""
        data: list = [None] * 4
        data[self.events.answer[0 if choice else 1]] = text
        self._run(self.events.send, data)


class Student(threading.Thread):
    """A student's page: waits on the room's pulse and, when it moved, refreshes (the page's own event, as its pulse
    presses it); notes when it first showed each step revealed."""

    def __init__(self, page: Page, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.page, self.stop = page, stop
        self.reads: list[float] = []
        self.seen: list[float] = []  # time.monotonic() when the page turned to showing a step revealed
        self.showing = False
        self.drawn: dict[str, float] = {}  # the room's version -> time.monotonic() when the page had drawn it

    def run(self) -> None:
        version = ""
        while not self.stop.is_set():
            try:
                now = pulse(self.page.url, self.page.code, version)
            except OSError:  # the app stopped under a held pulse: the run is over
                return
            if now != version:
                version = now
                took, revealed = _timed(self.page.refresh)
                self.reads.append(took)
                self.drawn[now] = time.monotonic()
                if revealed and not self.showing:
                    self.seen.append(time.monotonic())
                self.showing = revealed


def _playground(url: str, stop: threading.Event, served: list[float], failed: list[str]) -> None:
    """A visitor typing in the Playground: a new input's /inspect (every value it takes), back to back."""
    n = 0
    while not stop.is_set():
        n += 1
        try:
            took, _ = _timed(call_queued, url, "inspect", "rnn", "{}", f"visitor's sentence number {n}", "", "",
                             "auto", False, False)
        except Exception as e:  # a room measured without its visitor is not this bench (the app stopping is the end)
            if not stop.is_set():
                failed.append(f"{type(e).__name__}: {e}")
            return
        served.append(took)


def call_queued(url: str, name: str, *data: object) -> dict:
    """A queued endpoint by name (POST /call, then read its event stream)."""
    request = urllib.request.Request(f"{url}gradio_api/call/{name}", data=json.dumps({"data": list(data)}).encode(),
                                     headers={"Content-Type": "application/json"})
    event = json.loads(urllib.request.urlopen(request, timeout=60).read())["event_id"]
    stream = urllib.request.urlopen(f"{url}gradio_api/call/{name}/{event}", timeout=300).read().decode()
    return json.loads(stream.rsplit("data: ", 1)[1])


def _wait(done: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not {what} after {timeout_s:g} s")
        time.sleep(0.05)


def _pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[q - 1] if len(xs) >= 2 else xs[0]  # within the samples


@dataclass
class Round:
    """One class on a fresh server: each figure's samples, the app's and the simulated pages' CPU seconds."""

    answers: list[float] = field(default_factory=list)
    reveals: list[float] = field(default_factory=list)
    seen_after: list[float] = field(default_factory=list)
    followed: list[float] = field(default_factory=list)
    reads: list[float] = field(default_factory=list)
    served: list[float] = field(default_factory=list)
    app_cpu: float = 0.0
    pages_cpu: float = 0.0
    wall: float = 0.0


def one_round(students_n: int, steps_n: int) -> Round:
    """A fresh app, a room of `students_n` pages, `steps_n` steps each moved to, answered and revealed."""
    r = Round()
    proc, url, _ = start_app()
    stop = threading.Event()
    failed: list[str] = []
    try:
        room = call(url, "room_open")
        code, teacher = room["code"], room["teacher"]
        events = Events.of(url)
        pages = [Page(url, code, events) for _ in range(students_n)]
        for page in pages:  # each opens the room's address, one after the other (not measured)
            page.open()
        students = [Student(page, stop) for page in pages]
        visitor = threading.Thread(target=_playground, args=(url, stop, r.served, failed), daemon=True)
        cpu_before, pages_before = tree_cpu(proc.pid), time.process_time()
        began = time.monotonic()
        visitor.start()
        for s in students:
            s.start()
        rng = random.Random(0)
        for number in range(1, steps_n + 1):
            took, _ = _timed(call, url, "room_step", code, teacher, number)
            moved_at, version = time.monotonic() - took, pulse(url, code)
            _wait(lambda v=version: all(v in s.drawn for s in students), f"every page on step {number}")
            r.followed += [s.drawn[version] - moved_at for s in students]
            prediction = STEPS[number - 1].predict  # each student reads it on their page, then answers
            plan = sorted((rng.uniform(0, ANSWER_WINDOW_S), s) for s in students)
            start = time.monotonic()
            for at, s in plan:  # each student answers at their moment
                time.sleep(max(0.0, start + at - time.monotonic()))
                took, _ = _timed(s.page.answer, _answer(prediction, rng), bool(prediction.choices))
                r.answers.append(took)
            took, _ = _timed(call, url, "room_reveal", code, teacher)
            revealed_at = time.monotonic() - took
            r.reveals.append(took)
            _wait(lambda n=number: all(len(s.seen) >= n for s in students), f"every page showing {number} revealed")
            r.seen_after += [s.seen[number - 1] - revealed_at for s in students]
        # the visitor served at least once meanwhile (on a loaded machine a short round can end before its first
        # /inspect does: waited for, with a hang detector's bound, not judged by the machine's speed)
        _wait(lambda: bool(r.served or failed), "the Playground's visitor served once", timeout_s=300)
        r.wall = time.monotonic() - began
        stop.set()
        r.app_cpu, r.pages_cpu = used(cpu_before, tree_cpu(proc.pid)), time.process_time() - pages_before
    finally:
        stop.set()
        stop_app(proc)
    if failed or not r.served:
        raise RuntimeError(f"the Playground's visitor was not served meanwhile: {failed or 'no /inspect finished'}")
    r.reads = [t for s in students for t in s.reads]
    return r


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "RESULTS-room.md")
    p.add_argument("--students", type=int, default=STUDENTS)
    p.add_argument("--steps", type=int, default=STEPS_RUN)
    p.add_argument("--rounds", type=int, default=ROUNDS)
    args = p.parse_args(argv)
    students_n, steps_n, rounds_n = (5, 1, 1) if args.quick else (args.students, args.steps, args.rounds)
    rounds = [one_round(students_n, steps_n) for _ in range(rounds_n)]

    def pooled(name: str) -> list[float]:
        return [x for r in rounds for x in getattr(r, name)]

    rows = [("an answer's round trip", "answers"), ("the reveal's round trip (the teacher's call)", "reveals"),
            ("a student's page shows the reveal, after it (the pulse's answer and the refresh)", "seen_after"),
            ("a student's page shows the teacher's next step, after the move", "followed"),
            ("a page's refresh when the pulse moved (its event), round trip", "reads"),
            ("meanwhile, a Playground visitor's /inspect", "served")]
    out = ["# A class's room under a full class", "",
           f"{measured_by('room', args.quick)}: {rounds_n} round(s), each on a freshly started app: one room, "
           f"{students_n} simulated students' pages over HTTP (Gradio's protocol, a session each), each waiting on "
           f"the room's pulse and refreshing when it moved; {steps_n} step(s), each moved to by the teacher, "
           f"answered by every student within {ANSWER_WINDOW_S:g} s, then revealed; a visitor's /inspect back to "
           "back in the Playground all along. The simulated pages, the visitor and the app share this machine's 2 "
           "cores (a real room's browsers run elsewhere).", "",
           "| what (all rounds) | n | median s | p95 s | max s |", "|---|---:|---:|---:|---:|"]
    out += [f"| {what} | {len(xs)} | {statistics.median(xs):.3f} | {_pct(xs, 95):.3f} | {max(xs):.3f} |"
            for what, name in rows if (xs := pooled(name))]
    out += ["", "| round | answer p95 s | reveal shown p95 s | next step shown p95 s | app CPU-s (cores) | "
                "simulated pages' CPU-s | wall s |", "|---:|---:|---:|---:|---:|---:|---:|"]
    out += [f"| {i} | {_pct(r.answers, 95):.3f} | {_pct(r.seen_after, 95):.3f} | {_pct(r.followed, 95):.3f} | "
            f"{r.app_cpu:.1f} ({r.app_cpu / r.wall:.2f}) | {r.pages_cpu:.1f} | {r.wall:.0f} |"
            for i, r in enumerate(rounds, 1)]
    worst = {"answer": pooled("answers"), "reveal shown": pooled("seen_after")}
    out += ["", "Over all rounds: " + "; ".join(
        f"{k} p95 {_pct(v, 95):.3f} s ({'within' if _pct(v, 95) <= GOAL_S else 'over'} the {GOAL_S:g}-s goal; "
        f"{sum(_pct(getattr(r, n), 95) <= GOAL_S for r in rounds)} of {rounds_n} rounds within)"
        for (k, v), n in zip(worst.items(), ("answers", "seen_after"), strict=True)) + "."]
    args.out.write_text("\n".join(out) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
