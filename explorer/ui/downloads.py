"""Files the API offers for download (the deployment lab's artefacts) and reports to read in the browser (tlparse's),
at an address that names no server path: `GET /artefacts/<job>/<path>` serves `<export dir>/<job>/<path>`, and
nothing outside a job's directory. A page is shown, not downloaded, in a sandbox: its scripts run without this
site's origin (a report quotes a visitor's code)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.responses import FileResponse, PlainTextResponse

from explorer.serving.addresses import Asgi, Scope

PREFIX = "/artefacts/"
SHOWN = {".html", ".txt", ".json"}  # a report's pages: shown in the browser, not downloaded


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
        file = (self.root / path.removeprefix(PREFIX)).resolve()  # the path comes decoded
        inside = file.is_relative_to(self.root) and len(file.relative_to(self.root).parts) >= 2  # <job>/<path>
        if not inside or not file.is_file():
            response: Any = PlainTextResponse("no such artefact (the server keeps the latest few jobs' files)",
                                              status_code=404)
        elif file.suffix in SHOWN:
            response = FileResponse(file, headers={"Content-Security-Policy": "sandbox allow-scripts"})
        else:
            response = FileResponse(file, filename=file.name)
        await response(scope, receive, send)
