"""An exception as the user sees it: how long its traceback is, which of the user's lines it names last, and
its first message line; paths made relative to the project (no machine paths)."""

from __future__ import annotations

import linecache
import traceback
from dataclasses import asdict, dataclass
from typing import Any

from explorer.compile.observe import message_line, user_line
from explorer.core.paths import EDITOR, PROJECT, in_editor, sanitize


def _models_frame(e: BaseException) -> tuple[str, int] | None:
    """The deepest frame in `models/` (or in the model's file as edited in the Code tab) across the exception and
    the ones chained to it."""
    found = None
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        for f in traceback.extract_tb(e.__traceback__):
            if f.filename.startswith(PROJECT + "models/") or f.filename == EDITOR:
                found = (f.filename, f.lineno or 0)
        e = e.__cause__ or e.__context__
    return found


@dataclass(frozen=True)
class Failure:
    exception: str  # the type's name
    message: str  # its first non-empty line
    frames: int  # frames in the printed traceback, chained exceptions included
    lines: int  # lines of the printed traceback
    chained: int  # exceptions in the chain beyond the first
    where: str  # "models/bugs.py:21", the user's line the traceback names last ("" if none)
    source: str  # that line's code
    text: str  # the traceback as printed, sanitized

    @classmethod
    def of(cls, e: BaseException) -> Failure:
        text = sanitize("".join(traceback.format_exception(e)))
        named = user_line(e)  # dynamo puts it in the message's "from user code" part
        if named:
            where, _, source = named.removeprefix(" (at ").removesuffix(")").partition(": ")
        elif (frame := _models_frame(e)) is not None:
            where, source = f"{sanitize(frame[0])}:{frame[1]}", linecache.getline(frame[0], frame[1]).strip()
        else:
            where = source = ""
        return cls(type(e).__name__, sanitize(message_line(e)), text.count('  File "'), len(text.splitlines()),
                   text.count("The above exception was the direct cause") +
                   text.count("During handling of the above exception"), in_editor(where), source, text)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
