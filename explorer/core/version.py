"""Which code measured and judged a result: a digest of the engine's and the models' sources, so that a result
kept across a restart is shown only by the code that made it (a Space's redeploy keeps no git metadata)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from explorer.core.paths import PROJECT

MEASURING = ("explorer", "models")  # what runs an experiment and judges it (not the tests, benches or docs)


@functools.cache
def code_version() -> str:
    """The first 12 hex digits of a SHA-256 over every .py file under MEASURING, by path and content."""
    digest = hashlib.sha256()
    for folder in MEASURING:
        for path in sorted(Path(PROJECT, folder).rglob("*.py")):
            digest.update(path.relative_to(PROJECT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
