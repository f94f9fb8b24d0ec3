"""Dynamo's cached graphs of one function, read without running anything: what each input dimension became in each
graph (a constant or dynamic), the graph's guards on shapes in dynamo's words with the line dynamo recorded for each,
and whether an input would reuse the graph (the guard manager's own check, naming the guard that fails).

torch 2.13 has no public accessor for a function's cache entries: this reads them through
`torch._dynamo.eval_frame._debug_get_cache_entry_list`, the one depyf and dynamo's own tests use (it runs in the
compile worker only; tests/labs/shapes checks it against what dynamo then does)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from explorer.labs.shapes.symbols import UNREAD, Symbols

_LINE = re.compile(r"^[| ]*\+- (?P<kind>[A-Z_]+): (?P<code>.*?)(?:  # (?P<note>.*))?$")
_SIZES = re.compile(r"size=\[(?P<sizes>[^\]]*)\]")
_WHERE = re.compile(r"# (?P<where>[\w./-]+\.py:\d+ in \w+)")


@dataclass(frozen=True)
class Guard:
    kind: str  # dynamo's kind of guard: TENSOR_MATCH (sizes, strides, dtype), LAMBDA_GUARD (a relation on sizes)
    code: str  # in dynamo's words
    where: str  # the line dynamo recorded for it ("models/rnn.py:97 in forward"), or ""
    source: str  # that line's code as dynamo printed it, or dynamo's note


@dataclass(frozen=True)
class CachedGraph:
    compile_id: str  # "frame/attempt": dynamo's name of the compile that made it
    dims: tuple[str, ...]  # per dimension of the input: its size where the graph is specialized to it, or "dynamic"
    guards: tuple[Guard, ...]  # its guards that concern the input's shape
    symbols: Symbols = UNREAD  # what each dimension became, read where the graph was traced (symbols.py)


def _guard(line: str) -> Guard | None:
    m = _LINE.match(line)
    if m is None:
        return None
    note = m.group("note") or ""
    where = _WHERE.search(note)
    source = note[:where.start()].rstrip(" #") if where else note
    return Guard(m.group("kind"), m.group("code").strip(), where.group("where") if where else "", source.strip())


def _about_shape(g: Guard, name: str) -> bool:
    ref = f"L['{name}']"
    return ref in g.code and (g.kind == "TENSOR_MATCH" or ".size()" in g.code or ".stride()" in g.code)


def read(entry: Any, name: str) -> CachedGraph:
    """One cache entry of a function whose input tensor is the local `name`."""
    guards = [g for line in str(entry.guard_manager).splitlines() if (g := _guard(line)) and _about_shape(g, name)]
    match = next((t for g in guards if g.kind == "TENSOR_MATCH" and (t := _SIZES.search(g.code))), None)
    sizes = [s.strip() for s in match.group("sizes").split(",")] if match else []
    dims = tuple("dynamic" if s == "None" else s for s in sizes)
    return CachedGraph(str(entry.compile_id), dims, tuple(guards))


def frame_of(module: Any) -> Callable[..., Any]:
    """The function whose frame dynamo compiles for a module called as `module(ids)`: its class's `forward` (a
    decorated forward, as `transformers` writes them, is the wrapper dynamo sees, not the function it wraps)."""
    return type(module).forward


def entries(fn: Callable[..., Any]) -> list[Any]:
    """Dynamo's cache entries of `fn`, in the order dynamo tries them (the newest first)."""
    return list(_debug_get_cache_entry_list(fn.__code__))


def frame_locals(fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """What `fn(*args)` holds as its locals when its frame starts (its arguments, defaults filled): what dynamo's
    guards read."""
    bound = inspect.signature(fn, follow_wrapped=False).bind(*args)
    bound.apply_defaults()
    return dict(bound.arguments)


def failing(entry: Any, f_locals: dict[str, Any]) -> str | None:
    """None if the entry's graph accepts these locals, else the first guard that fails, in dynamo's words (with the
    line dynamo recorded for it)."""
    if entry.guard_manager.check(f_locals):
        return None
    parts = entry.guard_manager.check_verbose(f_locals).verbose_code_parts
    return parts[0] if parts else "a guard failed (dynamo named none)"
