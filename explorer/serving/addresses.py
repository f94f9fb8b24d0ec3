"""A request whose address is longer than any link the app makes gets a page that says so.

Without this, a hand-made link with ~65,000 characters of text reaches Gradio, whose URL parsing (httpx's
65,536-character limit) fails, and the browser shows a bare "Internal Server Error". A state link carries at
most the token limit of text, percent-encoded: a few thousand characters. Past 64 KiB of request head the server's
HTTP parser (httptools, which uvicorn takes when installed) refuses the request itself (a bare 400, "Invalid HTTP
request received."), which is why the limit sits well below that."""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from typing import Any

from explorer.core.limits import MAX_ADDRESS_CHARS, MAX_TOKENS

Scope = dict[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def refusal(length: int) -> str:
    return (f"This address is {length:,} characters long; Graph Explorer accepts at most {MAX_ADDRESS_CHARS:,}. "
            f"A state link carries at most {MAX_TOKENS} tokens of text, so this one was not made by the app "
            "(or was cut and pasted together). Open the app without it and paste the text into the input.")


class LongAddressGuard:
    """ASGI middleware: 414 with a readable page for an over-long path and query, before any route runs."""

    def __init__(self, app: Asgi) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        length = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if scope["type"] != "http" or length <= MAX_ADDRESS_CHARS:
            await self.app(scope, receive, send)
            return
        body = (f"<!doctype html><title>Link too long</title><h1>Link too long</h1><p>{html.escape(refusal(length))}"
                '</p><p><a href="./">Open Graph Explorer</a></p>').encode()
        await send({"type": "http.response.start", "status": 414,
                    "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
