"""Every limit the app enforces, in one place; an operator raises them with environment variables."""

from __future__ import annotations

import os


def _env(name: str, default: float, cast: type) -> float:
    """A positive number from the environment, or the default; a bad value stops start-up."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = cast(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a positive {cast.__name__}; got {raw!r}") from None
    if not value > 0:
        raise SystemExit(f"{name} must be positive; got {raw!r}")
    return value


MAX_TOKENS = _env("GE_MAX_TOKENS", 512, int)  # longer text is truncated, with a notice
# A payload past this is refused before it is even encoded (a lab batch is at most 256 x 512 bytes).
MAX_TEXT_CHARS = _env("GE_MAX_TEXT_CHARS", 200_000, int)
MAX_DRAWN_NODES = _env("GE_MAX_DRAWN_NODES", 300, int)  # beyond this the graph is drawn collapsed
FORWARD_BUDGET_S = _env("GE_FORWARD_BUDGET_S", 0.08, float)  # min_run_time of one forward timing
TRAIN_BUDGET_S = _env("GE_TRAIN_BUDGET_S", 0.10, float)  # min_run_time of one train-step timing
MAX_QUEUE = _env("GE_MAX_QUEUE", 48, int)  # runs waiting for the measurement queue before "busy, try again"
LOAD_QUEUE = _env("GE_LOAD_QUEUE", 4, int)  # with this many waiting, timing budgets are halved (and it is said)
MAX_LIVE_MODELS = _env("GE_MAX_LIVE_MODELS", 12, int)  # built models kept across all sessions (LRU)
HISTORY_LENGTH = _env("GE_HISTORY_LENGTH", 200, int)  # runs kept per session for the plots
# One thread is steadier than two on a 2-core machine (and leaves a core for the server).
THREADS = _env("GE_THREADS", 1, int)
COMPILE_TIMEOUT_S = _env("GE_COMPILE_TIMEOUT_S", 120.0, float)  # a compile job past this is killed
RECOMPILE_LIMIT = _env("GE_RECOMPILE_LIMIT", 8, int)  # dynamo's recompile_limit in the compile worker
MAX_BATCH = _env("GE_MAX_BATCH", 256, int)  # sentences per batch in the batching lab
MAX_PARAMS = _env("GE_MAX_PARAMS", 64_000_000, int)  # parameters of one model (the knobs' ranges reach 63M)
# Estimated bytes a train step saves for backward (an upper bound per model, see models/*.activation_bytes):
# a Playground architecture at the token limit, or a lab strategy on its whole batch.
MAX_ACTIVATION_BYTES = _env("GE_MAX_ACTIVATION_BYTES", 2**30, int)


def describe() -> dict[str, float | int]:
    return {
        "max_tokens": MAX_TOKENS,
        "max_text_chars": MAX_TEXT_CHARS,
        "max_drawn_nodes": MAX_DRAWN_NODES,
        "forward_budget_s": FORWARD_BUDGET_S,
        "train_budget_s": TRAIN_BUDGET_S,
        "history_length": HISTORY_LENGTH,
        "max_live_models": MAX_LIVE_MODELS,
        "max_queue": MAX_QUEUE,
        "load_queue": LOAD_QUEUE,
        "threads": THREADS,
        "compile_timeout_s": COMPILE_TIMEOUT_S,
        "recompile_limit": RECOMPILE_LIMIT,
        "max_batch": MAX_BATCH,
        "max_params": MAX_PARAMS,
        "max_activation_bytes": MAX_ACTIVATION_BYTES,
    }
