"""The page and its config, built once per address they are served under, not once per visitor.

Every API client first fetches `GET /config`, and every page load `GET /`, whose HTML carries the same config:
Gradio deep-copies the whole app's config (half a megabyte here: every tab's components) and walks it to write the
server's address into it, on the server's one Python core, for each request, while everyone else's runs wait (a
class connecting at once queued for seconds: bench/RESULTS-load.md; the page too, each load). The
answer depends only on the address the page was reached at (Host, the proxy's X-Forwarded-* headers, the mount
path), as long as the app has no login, which this one has not: each is kept after its first answer and sent again
as it was (uncompressed: Gradio's compression wraps this, per client). A request with a query (a deep link, a
lesson's address) goes to Gradio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from explorer.serving.addresses import Asgi, Scope

PATHS = ("/", "/config", "/config/")
ADDRESSING = (b"host", b"x-forwarded-host", b"x-forwarded-proto")  # what the config's root URL is made of
KEPT = 8  # addresses kept (a server is reached at one or two: localhost, a proxy's name)

Message = dict[str, Any]


class ConfigCache:
    """ASGI middleware: Gradio's answer to `GET /` and `GET /config` without a query, kept per address."""

    def __init__(self, app: Asgi) -> None:
        self.app = app
        self.kept: dict[tuple, list[Message]] = {}

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in PATHS or scope["query_string"]:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        key = (scope["path"], scope.get("root_path", ""), *(headers.get(h) for h in ADDRESSING))
        kept = self.kept.get(key)
        if kept is None:
            answer: list[Message] = []

            async def keeping(message: Message) -> None:
                answer.append(message)
                await send(message)

            await self.app(scope, receive, keeping)
            if _keepable(answer) and len(self.kept) < KEPT:
                self.kept[key] = answer
            return
        for message in kept:
            await send(message)


def _keepable(answer: list[Message]) -> bool:
    """A whole 200 answer that sets no cookie."""
    start = answer[0] if answer else {}
    return (start.get("type") == "http.response.start" and start.get("status") == 200
            and all(name.lower() != b"set-cookie" for name, _ in start.get("headers", []))
            and not answer[-1].get("more_body", False))
