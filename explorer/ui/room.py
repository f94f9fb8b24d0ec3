"""The Lessons tab's room (explorer/claims/room.py): the teacher opens one and projects its code, address and QR
code; `?room=CODE` joins a student's page, which follows the teacher's step, asks the step's prediction before the
evidence, and shows the room's answers beside the measured one when the teacher reveals. Only the teacher's page
(its browser keeps the teacher's token) moves the room, reveals, re-measures and downloads the answers."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
import segno

from explorer.claims.lessons import step
from explorer.claims.room import ROOM_RETRY_S, RoomView
from explorer.claims.turns import Turn
from explorer.core.errors import USER_ERRORS
from explorer.core.queues import Queue
from explorer.runs.session import Session
from explorer.server import EXPORTS, ROOMS, claim_numbers
from explorer.ui.claims import LessonPanel
from explorer.ui.stream import Updates
from explorer.views.room import distribution_figure, join_address, room_markdown, runs_figure

STORAGE_KEY = "graph-explorer-room"  # the browser's own copy of its student token per room: a reload keeps it

REFRESH_ID = "ge-room-refresh"  # the hidden button the page's pulse presses when the room moved
SEND_ID = "ge-room-send"  # a student's prediction goes with it (bench/room.py's pages find the event by these)

# The room in the address bar (replaced, not pushed), so that a reload comes back into it; only its code, which the
# room sees anyway (the teacher's token stays in the browser's storage; read off the page: a State never reaches
# it). Then the pulse: the page asks whether the room moved since what it shows (explorer/ui/room_pulse.py, a few
# bytes, outside Gradio's events, answered when it moves) and presses the refresh button when it did; a room that
# ended is refreshed once (the page says so) and no longer asked.
ROOM_JS = """() => {
  const shown = document.querySelector('.ge-room-code')?.textContent;
  const url = new URL(window.location.href);
  if (shown) { url.searchParams.set('room', shown); window.history.replaceState(null, '', url); }
  const code = url.searchParams.get('room');
  if (!code || window.geRoomPulse) return;
  window.geRoomPulse = true;
  const refresh = () => document.getElementById('REFRESH_ID')?.click();
  const pause = () => new Promise(done => setTimeout(done, RETRY_MS));
  (async () => {
    let seen = '';
    for (;;) {
      const teacher = !!document.querySelector('.ge-room-code');  // its page watches the counts too
      try {
        const r = await fetch(`room/${encodeURIComponent(code.toUpperCase())}/pulse?counts=${teacher ? 1 : 0}` +
                              `&seen=${encodeURIComponent(seen)}`, {cache: 'no-store'});
        if (r.status === 404) { refresh(); window.geRoomPulse = false; return; }
        if (!r.ok) { await pause(); continue; }
        const p = await r.json();
        const now = teacher ? `${p.version}/${p.joined}/${p.answered}` : `${p.version}`;
        if (now !== seen) refresh();  // (once at the start too)
        seen = now;
      } catch (e) { await pause(); }  // the server restarting: ask again
    }
  })();
}""".replace("REFRESH_ID", REFRESH_ID).replace("RETRY_MS", str(int(ROOM_RETRY_S * 1000)))


@dataclass
class RoomPanel:
    code: gr.State  # "" outside a room
    who: gr.State  # the teacher's token, or this page's student's
    teacher: gr.State  # whether this page is the teacher's
    kept: gr.BrowserState  # {room code: student token}
    drawn: gr.State  # what this page last drew (step, revealed, answered, joined): a tick without news sends one value
    opener: gr.Button
    join: gr.HTML  # the teacher's: the code, the address and its QR code
    said: gr.Markdown
    asking: gr.Group  # a student's, until the reveal: the prediction's field and its button
    choice: gr.Radio
    number: gr.Textbox
    send: gr.Button
    reveal: gr.Button
    run: gr.Button  # the teacher's: the step's experiment, ahead of any visitor's (explorer/claims/turns.py)
    again: gr.Button
    download: gr.Button
    answers: gr.File
    plot: gr.Plot
    runs: gr.Plot  # the room's runs of their own inputs during the step, on the reveal
    refresh: gr.Button  # hidden: the page's pulse presses it when the room moved
    session: gr.State  # the page's: in a room, its Playground's runs are the room's too
    lesson: LessonPanel

    @property
    def outputs(self) -> list[Any]:
        card = self.lesson.card
        return [self.code, self.who, self.teacher, self.drawn, self.opener, self.join, self.said, self.asking,
                self.choice, self.number, self.reveal, self.run, self.again, self.download, self.plot, self.runs,
                card.evidence, card.run, card.again]

    @property
    def with_lesson(self) -> list[Any]:
        return [*self.outputs, *self.lesson.outputs]

    def shown(self, v: RoomView, before: tuple | None = None) -> Updates:
        """What the room's state sets on this page, less what it already shows (`before`, what it drew last): the
        room's line always; on a reveal the question folded away, the room's answers and the card's evidence
        unfolded; on a new step its question too. Every property update costs Gradio a new component, on every page
        at once at a reveal: none is sent unchanged (what a reveal costs a room: bench/RESULTS-room.md)."""
        out: Updates = {self.drawn: _drawn(v), self.said: room_markdown(v)}
        same_step = before is not None and before[0] == v.step
        if same_step and before[1] == v.revealed:  # type: ignore[index]
            return out
        asking = not v.teacher and not v.revealed
        out |= {self.asking: gr.update(visible=asking),
                self.plot: gr.update(value=distribution_figure(v), visible=v.revealed),
                self.lesson.card.evidence: gr.update(visible=v.revealed)}
        if v.teacher:
            out[self.reveal] = gr.update(visible=not v.revealed)
        if v.runs or not same_step:  # the room's own inputs, if any ran (an update less for every page otherwise)
            out[self.runs] = gr.update(value=runs_figure(v), visible=bool(v.runs))
        if not same_step:  # the step's question
            out |= {self.choice: gr.update(choices=list(v.choices), value=v.mine, visible=bool(v.choices)),
                    self.number: gr.update(visible=not v.choices, value=v.mine if not v.choices else "")}
        return out

    def entered(self, code: str, who: str, session: Session, request: gr.Request) -> Updates:
        """This page in room `code` as `who` (the teacher's token or a student's), at the room's step; the teacher's
        with the box to project. Its Playground's runs go to the room's plot from now on."""
        v = ROOMS.view(code, who)
        session.room = (v.code, who)
        card = self.lesson.card  # in a room, the experiment runs from the teacher's buttons only, first in line
        return {self.code: v.code, self.who: who, self.teacher: v.teacher,
                self.join: _join_box(v.code, request) if v.teacher else "", self.opener: gr.update(visible=False),
                self.download: gr.update(visible=v.teacher), self.run: gr.update(visible=v.teacher),
                self.again: gr.update(visible=v.teacher), card.run: gr.update(visible=False),
                card.again: gr.update(visible=False), **self.lesson.at(v.step), **self.shown(v)}

    def opened(self, number: int, kept: dict | None, session: Session, request: gr.Request) -> Updates:
        """A new room at the step on screen, this page its teacher's (this browser keeps the token: a reload, or
        another tab of it, is the teacher's too; the address shows only the room's code, which the room sees)."""
        try:
            code, token = ROOMS.open()
        except USER_ERRORS as e:  # the server's rooms are all taken
            return self._refused(e)
        ROOMS.go(code, token, number)
        return {**self.entered(code, token, session, request), self.kept: {**(kept or {}), code: token}}

    def loaded(self, kept: dict | None, session: Session, request: gr.Request) -> Updates:
        """`?room=CODE` puts this page in the room: as whoever this browser was there (the teacher, a student), else
        as a new student."""
        code = (request.query_params.get("room") or "").strip().upper()
        if not code:
            return {self.code: gr.skip()}  # (an empty dict would not be read as "no updates")
        kept = dict(kept or {})
        try:
            try:
                return {**self.entered(code, kept[code], session, request), self.kept: kept}
            except (KeyError, *USER_ERRORS):  # never here, or a token of a room that ended (the code reused since)
                kept[code] = ROOMS.join(code)
                return {**self.entered(code, kept[code], session, request), self.kept: kept}
        except USER_ERRORS as e:
            return {**self._refused(e), self.code: ""}

    def ticked(self, code: str, who: str, number: int, drawn: list | None) -> Updates:
        """When the room moved (the page's pulse): a student's page follows the teacher's step; the answers and a
        reveal appear; nothing is sent when nothing this page shows changed."""
        if not code:
            return {self.drawn: drawn}
        try:
            v = ROOMS.view(code, who)
        except USER_ERRORS as e:  # the room ended
            return {**self._refused(e), self.code: ""}
        if _drawn(v) == (drawn and tuple(drawn)) and v.step == number:
            return {self.drawn: drawn}
        if v.step != number:  # the page's step is not the room's: all of it again
            return {**self.lesson.at(v.step), **self.shown(v)}
        return self.shown(v, drawn)

    def answered(self, code: str, who: str, choice: str | None, number: str) -> Updates:
        try:
            v = ROOMS.view(code, who)
            ROOMS.answer(code, who, choice if v.choices else number)
        except USER_ERRORS as e:  # not a number, a choice it has not, the answer revealed since
            gr.Warning(str(e))
        return self._now(code, who)

    def revealed(self, code: str, who: str) -> Updates:
        try:
            ROOMS.reveal(code, who, claim_numbers)
        except USER_ERRORS as e:
            return self._refused(e)
        return self._now(code, who)

    def moved(self, code: str, who: str, teacher: bool, number: int) -> Updates:
        """The teacher's page moved the lesson's step: the room follows."""
        if not code or not teacher:
            return {self.drawn: gr.skip()}
        try:
            ROOMS.go(code, who, number)
        except USER_ERRORS as e:
            return self._refused(e)
        return self._now(code, who)

    def _now(self, code: str, who: str) -> Updates:
        try:
            return self.shown(ROOMS.view(code, who))
        except USER_ERRORS as e:
            return self._refused(e)

    def _refused(self, e: Exception) -> Updates:
        """A room's refusal (it ended, it is full, this is not the teacher's page): said on the page, not raised."""
        gr.Warning(str(e))
        return {self.said: f"*{e}*"}


def _join_box(code: str, request: gr.Request) -> str:
    """The teacher's to project: the room's code, the address students open and its QR code."""
    url, note = join_address(request.headers.get("host", ""), os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                             int(os.environ.get("GRADIO_SERVER_PORT", "7860")), code)
    qr = segno.make(url, error="m").svg_inline(scale=5, dark="#000", light="#fff", omitsize=True)  # sized by CSS
    return (f'<div class="ge-room-join"><div class="ge-room-code">{code}</div><div>Join at <b>{url}</b></div>'
            f"{qr}{f'<p>{note}</p>' if note else ''}</div>")


def _teachers_claim(number: int, code: str, who: str) -> str:
    """The step's claim, for the room's teacher only (a page's States are the server's: a student's page, even one
    calling the event by its number, holds a student's token)."""
    ROOMS.teacher(code, who)
    return step(number).claim


def _drawn(v: RoomView) -> tuple:
    return v.step, v.revealed, v.answered, v.students, v.mine


PULSE = {"fn": None, "inputs": None, "outputs": None, "js": ROOM_JS, "api_visibility": "private"}  # a .then()


def kept_rooms() -> gr.BrowserState:
    """This browser's tokens, by room: made outside every tab (an unopened tab's components are not on the page,
    and a BrowserState there would not be read from the browser's storage when the page loads)."""
    return gr.BrowserState({}, storage_key=STORAGE_KEY)


def room_box(kept: gr.BrowserState, session: gr.State) -> Callable[[LessonPanel], RoomPanel]:
    """The room's box, under the lesson's step (the code and QR code the teacher projects, the question a student
    answers: on the first screen, beside the card); returns what wires it to the lesson's step once that is made."""
    with gr.Group(elem_classes="ge-room"):
        opener = gr.Button("Open a room for this class (students predict, then you reveal)", size="sm",
                           elem_classes="ge-room-opener")
        join = gr.HTML()
        said = gr.Markdown()
        with gr.Group(visible=False) as asking:
            choice = gr.Radio(label="your prediction", visible=False)
            number = gr.Textbox(label="your prediction (a number)", visible=False, max_lines=1)
            send = gr.Button("Send my prediction", variant="primary", elem_id=SEND_ID)
        reveal = gr.Button("Reveal the answers and the evidence", variant="primary", visible=False)
        with gr.Row():
            run = gr.Button("Run this step's experiment (ahead of other visitors')", size="sm", visible=False)
            again = gr.Button("Measure it again", size="sm", visible=False)
        download = gr.Button("Download the room's answers (CSV)", size="sm", visible=False)
        answers = gr.File(label="the room's answers (no names: each answer and its count)", visible=False,
                          interactive=False)
        plot = gr.Plot(show_label=False, visible=False)
        runs = gr.Plot(show_label=False, visible=False)
        refresh = gr.Button("refresh the room", elem_id=REFRESH_ID, elem_classes="ge-hidden")
    made = (gr.State(""), gr.State(""), gr.State(False), kept, gr.State(None), opener, join, said, asking, choice,
            number, send, reveal, run, again, download, answers, plot, runs, refresh, session)
    return lambda lesson: _wired(RoomPanel(*made, lesson))


def _wired(panel: RoomPanel) -> RoomPanel:
    lesson = panel.lesson
    quiet = {"api_visibility": "private", "show_progress": "hidden"}
    panel.opener.click(panel.opened, [lesson.number, panel.kept, panel.session], [*panel.with_lesson, panel.kept],
                       **quiet).then(
        **PULSE)
    asked = [panel.code, panel.who, panel.choice, panel.number]
    # a room's calls are a dict's read or write: none waits in a queue behind a long run
    panel.send.click(panel.answered, asked, panel.outputs, queue=False, **quiet)
    panel.number.submit(panel.answered, asked, panel.outputs, queue=False, **quiet)
    panel.reveal.click(panel.revealed, [panel.code, panel.who], panel.outputs, queue=False, **quiet)
    lesson.card.wire(_teachers_claim, [lesson.number, panel.code, panel.who], buttons=(panel.run, panel.again),
                     queue=Queue.TEACHER, turn=Turn.FIRST)
    panel.download.click(lambda code, who: gr.File(EXPORTS.save(f"room-{code}-answers.csv",
                                                                ROOMS.csv(code, who).encode()), visible=True),
                         [panel.code, panel.who], panel.answers, **quiet)
    panel.refresh.click(panel.ticked, [panel.code, panel.who, lesson.number, panel.drawn], panel.with_lesson,
                        queue=False, trigger_mode="always_last", **quiet)  # a move during a refresh: once more
    lesson.link.change(panel.moved, [panel.code, panel.who, panel.teacher, lesson.number], panel.outputs, **quiet)
    return panel
