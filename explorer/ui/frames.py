"""An idle page asks for no more frames than its status timers show.

Gradio 6.31's status tracker asks for an animation frame in a loop while its status is pending, to count the seconds
it shows, and a tracker that leaves the page while pending (the page's own loader does, on every page: even an empty
Gradio app's) never stops: a frame at every one the screen draws, each a render, for as long as the page is open (a
class's laptops, a projector's, every open tab). The tracker reads the requestAnimationFrame of the moment its
module loads, before any script Gradio's `head` adds runs, so the page's HTML gets one first: it gives the tracker's
frames at TRACKER_FPS a second (its timer shows tenths of a second) and any other script's at the screen's rate.
The browser CPU of an idle page with and without it: bench/RESULTS-idle-page.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from explorer.serving.addresses import Asgi, Scope

TRACKER_FPS = 10
SCRIPT = (f"<script>(() => {{ const frame = window.requestAnimationFrame.bind(window); "
          f"window.requestAnimationFrame = (callback) => (new Error().stack || '').includes('/statustracker-') "
          f"? setTimeout(() => frame(callback), {1000 // TRACKER_FPS}) : frame(callback); }})();</script>")
PAGE = "/"  # the page (a query is a link's state, the same page)

Message = dict[str, Any]


class TrackerFrames:
    """ASGI middleware: SCRIPT first in the head of the page's HTML, before Gradio's own scripts."""

    def __init__(self, app: Asgi) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] != PAGE:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body: list[bytes] = []

        async def rewriting(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in message["headers"])
                if not html:
                    await send(message)
                    return
                start = message
                return
            if start is None:  # not the page's HTML: as it is
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            page = b"".join(body).replace(b"<head>", b"<head>" + SCRIPT.encode(), 1)
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, rewriting)
