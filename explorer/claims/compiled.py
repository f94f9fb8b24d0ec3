"""The compiled side as the claims use it: a model's default input run eagerly and then compiled by the
Playground's own engine (a Session and its compile track, in the compile worker)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from explorer.compile.options import CompileOptions
from explorer.compile.protocol import CompileFailure, Progress
from explorer.compile.track import CompiledRun
from explorer.compile.worker import CompileService
from explorer.core.errors import InputError
from explorer.core.examples import DEFAULT_TEXT
from explorer.session import RunResult, Session

INDUCTOR = CompileOptions("inductor", "auto", False, False)


def run_compiled(session: Session, service: CompileService, model: str, values: Mapping[str, Any] | None = None,
                 text: str = DEFAULT_TEXT) -> Iterator[str | tuple[RunResult, CompiledRun]]:
    """Configure, run eagerly (graph, timings) and compile with inductor; progress messages, then the pair."""
    session.configure(model, values)
    result = session.run(text)
    try:
        for item in session.run_compiled(service, INDUCTOR, result):
            if isinstance(item, Progress):
                yield f"{model} ({result.arch}): {item.phase} ({item.elapsed_s:.0f} s)"
            else:
                yield result, item
    except CompileFailure as e:
        raise InputError(f"{model}: {e}") from None
