"""A room's pulse: `GET /room/<code>/pulse` answers, in a few bytes and outside Gradio's event handling, how many
times the room moved (a step, a reveal), how many students joined and how many answered. Every page asks each
ROOM_TICK_S and refreshes the room (a Gradio event, which waits for the server's busy interpreter) only when what it
shows moved: a student's on a step or a reveal, the teacher's on the counts too. A hundred pages reading the room
through Gradio every second held the server's whole core (bench/RESULTS-room.md)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.responses import JSONResponse

from explorer.claims.room import Rooms
from explorer.serving.addresses import Asgi, Scope

_PULSE = re.compile(r"^/room/([A-Za-z0-9]{1,12})/pulse$")


class RoomPulse:
    """ASGI middleware: `GET /room/<code>/pulse` -> {"version", "joined", "answered"}, 404 for a room not open; the
    rest goes on."""

    def __init__(self, app: Asgi, rooms: Rooms) -> None:
        self.app, self.rooms = app, rooms

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        match = _PULSE.match(scope.get("path", "")) if scope["type"] == "http" and scope["method"] == "GET" else None
        if match is None:
            await self.app(scope, receive, send)
            return
        pulse = self.rooms.pulse(match.group(1))
        response = (JSONResponse(dict(zip(("version", "joined", "answered"), pulse, strict=True)),
                                 headers={"Cache-Control": "no-store"}) if pulse is not None
                    else JSONResponse({"error": "no such room open on this server"}, status_code=404))
        await response(scope, receive, send)
