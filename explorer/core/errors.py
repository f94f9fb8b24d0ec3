"""Errors that are the user's to fix: shown as a one-line message, never as a traceback."""

from __future__ import annotations

from models import ConfigError


class InputError(ValueError):
    """The text or the request cannot be run as given."""


USER_ERRORS = (InputError, ConfigError)


def one_line(e: BaseException, limit: int = 300) -> str:
    """'TypeName: first line of the message' (cut to `limit`): how a failure from torch is shown."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:limit] if text else ''}"
