"""The compiled side as the claims use it: a model's default input run eagerly and then compiled by the
Playground's own engine (a Session and its compile track, in the compile worker)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun
from explorer.core.errors import InputError
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.progress import Progress
from explorer.runs.session import RunResult, Session
from explorer.workers.protocol import WorkerFailure, Workers


def options(quick: bool) -> CompileOptions:
    """What the claims compile with: inductor, as the app does by default; aot_eager for a quick run."""
    return CompileOptions("aot_eager" if quick else "inductor", "auto", False, False)


def eager_then_compiled(session: Session, w: Workers, model: str, values: Mapping[str, Any] | None = None,
                        text: str = DEFAULT_TEXT) -> Iterator[Progress | tuple[RunResult, CompiledRun]]:
    """Configure, run eagerly (graph, timings) and compile; progress messages, then the pair."""
    session.configure(model, values)
    result = session.run(text, budget_scale=0.25 if w.quick else 1.0)
    try:
        for item in session.run_compiled(w.compile, options(w.quick), result):
            if isinstance(item, Progress):
                yield Progress(item.elapsed_s, f"{model} ({result.arch}): {item.phase}")
            else:
                yield result, item
    except WorkerFailure as e:
        raise InputError(f"{model}: {e}") from None
