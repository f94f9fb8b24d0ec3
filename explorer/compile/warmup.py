"""The start-up warm-up: compile every model's default config once with inductor, so a fresh app's first
compiled view does not pay the one-time C++ toolchain cost (inductor's cache is its own, on disk)."""

from __future__ import annotations

import time

from explorer.compile.options import CompileOptions, cxx_compiler
from explorer.compile.track import CompileTrack
from explorer.compile.worker import CompileService
from models import ZOO, make_config
from models.config import config_dict
from models.tokenizer import encode


def warm_compile_cache(service: CompileService) -> list[str]:
    """Returns one line per model, for the log."""
    if cxx_compiler() is None:
        return ["no C++ compiler: inductor unavailable, offer aot_eager or eager"]
    done = []
    for name in ZOO:
        track = CompileTrack("start-up warm-up")
        start = time.monotonic()
        try:
            for _ in track.run(service, name, config_dict(make_config(name)), name, CompileOptions(),
                               [encode("warm up")]):
                pass
            done.append(f"{name}: {time.monotonic() - start:.1f} s")
        except Exception as e:  # a warm-up failure must not stop the app; the real compile will say why
            done.append(f"{name}: failed ({e})")
    return done
