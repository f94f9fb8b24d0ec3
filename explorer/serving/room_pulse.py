"""A room's pulse: `GET /room/<code>/pulse` answers how many times the room has changed, in a few bytes, outside
Gradio's event handling. Every student's page asks each ROOM_TICK_S and refreshes the room (a Gradio event, which
costs the server ~10 ms) only when the number moved: a hundred pages polling Gradio's own route every second held a
whole core (bench/RESULTS-room.md)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.responses import JSONResponse

from explorer.claims.room import Rooms
from explorer.serving.addresses import Asgi, Scope

_PULSE = re.compile(r"^/room/([A-Za-z0-9]{1,12})/pulse$")


class RoomPulse:
    """ASGI middleware: `GET /room/<code>/pulse` -> {"version": n}, 404 for a room not open; the rest goes on."""

    def __init__(self, app: Asgi, rooms: Rooms) -> None:
        self.app, self.rooms = app, rooms

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        match = _PULSE.match(scope.get("path", "")) if scope["type"] == "http" and scope["method"] == "GET" else None
        if match is None:
            await self.app(scope, receive, send)
            return
        version = self.rooms.version(match.group(1))
        response = (JSONResponse({"version": version}, headers={"Cache-Control": "no-store"}) if version is not None
                    else JSONResponse({"error": "no such room open on this server"}, status_code=404))
        await response(scope, receive, send)
