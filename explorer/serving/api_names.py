"""A call by name reaches only an endpoint the API documents, with as many values as it takes.

Gradio answers `POST /gradio_api/call/<name>` (and `/run/<name>`, `/api/<name>`) for any event that has a name, the
page's private ones too (a lesson step answered `/call/lambda`); an unknown name fails inside the route with a bare
500, and a list of values too short fails with a three-line message. Here each gets a 404 or 422 with one line
(the API's endpoints; the values the endpoint takes, in order) before any route runs. The page itself calls its
events by number (over the queue, or `/run/<name>` with the event's number for un-queued ones), which this
leaves alone; `/call/v2/<name>` takes named values (defaults filled)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from explorer.core.limits import MAX_TEXT_CHARS
from explorer.serving.addresses import Asgi, Scope
from models.config import echoed

_BY_NAME = re.compile(r"^/gradio_api/(call/v2|call|run|api)/([^/]+)/?$")
MAX_BODY_BYTES = 8 * int(MAX_TEXT_CHARS) + 65_536  # the longest text a request may carry, as JSON escapes, and more

Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]


class NamedCallGuard:
    """ASGI middleware: a call by name to anything but `public` (endpoint name -> its parameters, in order), or with
    the wrong number of values, is refused with one readable line."""

    def __init__(self, app: Asgi, public: Mapping[str, tuple[str, ...]]) -> None:
        self.app, self.public = app, public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _BY_NAME.match(scope.get("path", "")) if scope["type"] == "http" and scope["method"] == "POST" else None
        if match is None:
            await self.app(scope, receive, send)
            return
        route, name = match.groups()
        if route == "call/v2" and name in self.public:  # named values, Gradio fills the defaults
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _refuse(send, 413, f"the request is over {MAX_BODY_BYTES:,} bytes; no value the API takes "
                                         "is that long")
                return
            if not message.get("more_body"):
                break
        try:
            sent_json = json.loads(body)
        except ValueError:
            sent_json = None
        request = sent_json if isinstance(sent_json, dict) else {}
        # `/run/<name>` with an event's number is how the page calls its un-queued events: by number (Gradio then
        # ignores the name), as over the queue, not by name.
        by_number = route in ("run", "api") and request.get("fn_index") is not None
        if not by_number and name not in self.public:
            await _refuse(send, 404, f"no endpoint {echoed('/' + name)}: the API's endpoints are "
                                     f"{', '.join('/' + n for n in sorted(self.public))} (see the page's 'Use via "
                                     "API' link)")
            return
        data = request.get("data")
        wanted = self.public.get(name, ())
        if not by_number and (not isinstance(data, list) or len(data) != len(wanted)):
            got = f"{len(data)}" if isinstance(data, list) else "no list"
            await _refuse(send, 422, f"/{name} takes {len(wanted)} value(s) in {{\"data\": [...]}}, in this order: "
                                     f"{', '.join(wanted) or 'none'}; got {got}")
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _refuse(send: Send, status: int, line: str) -> None:
    body = json.dumps({"error": line}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
