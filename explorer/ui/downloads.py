"""Files the API offers for download (the deployment lab's artefacts), at an address that names no server path:
`GET /artefacts/<job>/<file>` serves `<export dir>/<job>/<file>`, and nothing outside that directory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.responses import FileResponse, PlainTextResponse

from explorer.serving.addresses import Asgi, Scope

PREFIX = "/artefacts/"


class Downloads:
    """ASGI middleware: `GET PREFIX<job>/<file>` from `root`; anything else goes on to the app."""

    def __init__(self, app: Asgi, root: Path) -> None:
        self.app, self.root = app, root.resolve()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(PREFIX) or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        file = (self.root / path.removeprefix(PREFIX)).resolve()
        if file.parent.parent != self.root or not file.is_file():  # <job>/<file>, inside the export directory
            response: Any = PlainTextResponse("no such artefact (the server keeps the latest few jobs' files)",
                                              status_code=404)
        else:
            response = FileResponse(file, filename=file.name)
        await response(scope, receive, send)
