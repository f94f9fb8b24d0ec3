"""Errors that are the user's to fix: shown as a one-line message, never as a traceback."""

from __future__ import annotations

from models import ConfigError


class InputError(ValueError):
    """The text or the request cannot be run as given."""


USER_ERRORS = (InputError, ConfigError)
