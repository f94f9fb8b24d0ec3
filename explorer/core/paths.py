"""No path of the server's machine in what a person is shown: source paths relative to the project or to
site-packages, the standard library's as <python>/, temporary files as <tmp>/ (a download has its own handle)."""

from __future__ import annotations

import re
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

PROJECT = str(Path(__file__).resolve().parents[2]) + "/"
# a path relative to the project too (a venv inside it), never the markup around it (quotes, brackets, ** and `)
_SITE = re.compile(r"(?:[^\s\"'()*`]*/)?site-packages/")
_STDLIB = sysconfig.get_paths()["stdlib"] + "/"
_TMP = re.compile(re.escape(tempfile.gettempdir()) + r"/[^\s\"']*")
EDITOR = "<editor>"  # the Code tab's edited source's file name in its code objects, so its frames can be found


def in_editor(where: str) -> str:
    """A place named "<editor>:55" said as the editor numbers it."""
    return where.replace(f"{EDITOR}:", "the edited file, line ")


def relative(path: str) -> str:
    """A source path as the user knows it: relative to the project, or to site-packages, else as given."""
    return re.sub(r"^.*site-packages/", "", path.removeprefix(PROJECT))


def sanitize(text: str) -> str:
    """`text` (a traceback, an error) with every path of this machine made relative, a temporary one cut to its
    name."""
    text = _SITE.sub("", text).replace(PROJECT, "").replace(_STDLIB, "<python>/")
    return _TMP.sub(lambda m: "<tmp>/" + m.group(0).rsplit("/", 1)[-1], text)


def sanitized(value: Any, downloads: tuple[str, str] | None = None) -> Any:
    """A report (nested dicts and lists) with `sanitize` applied to every string; `downloads` (a directory, the
    address it is served at) turns a path of a file offered for download into its address first."""
    if isinstance(value, str):
        if downloads is not None:
            value = value.replace(downloads[0].rstrip("/") + "/", downloads[1])
        return sanitize(value)
    if isinstance(value, dict):
        return {k: sanitized(v, downloads) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitized(v, downloads) for v in value]
    return value
