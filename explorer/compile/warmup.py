"""The start-up warm-up: compile every zoo model's default config with inductor at the text a person compiles first
(the default) and at a second length, so that

- inductor's FX-graph and AOT-autograd caches (on disk) hold the graph of the default text, and, for a model
  whose graph is symbolic in the length (the transformer), the symbolic graph that serves every length;
- dynamo's automatic-dynamic profile (local PGO, kept on disk under the job id the worker sets) knows that the
  length varies, so a session's first compile is that symbolic graph: a cache hit at any length.

A length whose graph is specialized (the unrolled RNN, the tree's bracketing, early exit's depth) still
compiles anew: bench/RESULTS-first-compile.md measures both cases."""

from __future__ import annotations

import time
from collections.abc import Callable

from explorer.compile.options import CompileOptions, cxx_compiler
from explorer.compile.track import CompileTrack
from explorer.core.examples import DEFAULT_TEXT
from explorer.sources.registry import make_config
from explorer.workers.protocol import JobRunner
from models import ZOO
from models.config import config_dict
from models.tokenizer import encode

SECOND_TEXT = "warm up"  # another length: dynamo's automatic dynamic makes the length symbolic


def warm_compile_cache(service: JobRunner, between: Callable[[], object] = lambda: None) -> list[str]:
    """Returns one line per model, for the log; `between` is called before each (the warm-up yields to visitors)."""
    if cxx_compiler() is None:
        return ["no C++ compiler: inductor unavailable, offer aot_eager or eager"]
    done = []
    for name in ZOO:  # the models a visitor meets first; a library's or a user's compiles on demand
        between()
        start = time.monotonic()
        config = config_dict(make_config(name))
        try:
            # Two lengths teach the profile; then a session's first compile as people will have it (symbolic
            # wherever the profile now makes it so: the tree's graph differs from the first session's).
            for session, texts in (("warm-up", [DEFAULT_TEXT, SECOND_TEXT]), ("warm-up, again", [DEFAULT_TEXT])):
                for _ in CompileTrack(session).run(service, name, config, name, CompileOptions(),
                                                   [encode(t) for t in texts]):
                    pass
            done.append(f"{name}: {time.monotonic() - start:.1f} s")
        except Exception as e:  # a warm-up failure must not stop the app; the real compile will say why
            done.append(f"{name}: failed ({e})")
    return done
