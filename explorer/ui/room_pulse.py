"""A room's pulse: `GET /room/<code>/pulse?seen=<what the page shows>` answers, in a few bytes and outside Gradio's
event handling, how many times the room moved (a step, a reveal), how many students joined and how many answered,
as soon as that differs from what the page has seen (held up to ROOM_HOLD_S while it does not). A student's page
has seen "<version>", the teacher's (`counts=1`) "<version>/<joined>/<answered>"; the page refreshes the room (a
Gradio event) only when the answer differs. A page learns of a reveal when it happens, not at its next tick (a
pulse asked every second would add half a second on average), and an idle room costs one held request per page
(what a reveal costs a room: bench/RESULTS-room.md)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from starlette.responses import JSONResponse

from explorer.claims.room import ROOM_HOLD_S, Rooms
from explorer.serving.addresses import Asgi, Scope

_PULSE = re.compile(r"^/room/([A-Za-z0-9]{1,12})/pulse$")


def seen_as(pulse: tuple[int, int, int], counts: bool) -> str:
    """What a page that shows `pulse` has seen: the version, and the counts on the teacher's page."""
    version, joined, answered = pulse
    return f"{version}/{joined}/{answered}" if counts else f"{version}"


class RoomPulse:
    """ASGI middleware: `GET /room/<code>/pulse` -> {"version", "joined", "answered"} once it differs from `seen`,
    404 for a room not open; the rest goes on."""

    def __init__(self, app: Asgi, rooms: Rooms) -> None:
        self.app, self.rooms = app, rooms
        self._waiting: dict[str, set[asyncio.Event]] = defaultdict(set)  # room code -> its held pulses
        self._loop: asyncio.AbstractEventLoop | None = None
        rooms.listen(self._moved)

    def _moved(self, code: str) -> None:
        """(any thread) Room `code` moved: its held pulses look again."""
        if self._loop is not None and self._waiting.get(code):
            self._loop.call_soon_threadsafe(self._wake, code)

    def _wake(self, code: str) -> None:
        for event in self._waiting.get(code, ()):
            event.set()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        match = _PULSE.match(scope.get("path", "")) if scope["type"] == "http" and scope["method"] == "GET" else None
        if match is None:
            await self.app(scope, receive, send)
            return
        self._loop = asyncio.get_running_loop()
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        seen, counts = query.get("seen", [""])[0], query.get("counts", ["0"])[0] == "1"
        pulse = await self._changed(match.group(1).upper(), seen, counts)
        response = (JSONResponse(dict(zip(("version", "joined", "answered"), pulse, strict=True)),
                                 headers={"Cache-Control": "no-store"}) if pulse is not None
                    else JSONResponse({"error": "no such room open on this server"}, status_code=404))
        await response(scope, receive, send)

    async def _changed(self, code: str, seen: str, counts: bool) -> tuple[int, int, int] | None:
        """Room `code`'s pulse once it is not `seen` (or ROOM_HOLD_S has passed; None: no such room)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ROOM_HOLD_S
        while True:
            event = asyncio.Event()
            self._waiting[code].add(event)  # before reading: a move from here on wakes it
            try:
                pulse = self.rooms.pulse(code)
                left = deadline - loop.time()
                if pulse is None or seen_as(pulse, counts) != seen or left <= 0:
                    return pulse
                with contextlib.suppress(TimeoutError):  # held long enough: answered as it is
                    await asyncio.wait_for(event.wait(), left)
            finally:
                self._waiting[code].discard(event)
                if not self._waiting[code]:
                    del self._waiting[code]
