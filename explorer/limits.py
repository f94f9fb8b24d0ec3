"""Every limit the app enforces, in one place; an operator raises them with environment variables."""

from __future__ import annotations

import os


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number; got {raw!r}") from None
    if value <= 0:
        raise SystemExit(f"{name} must be positive; got {value}")
    return value


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a number; got {raw!r}") from None
    if not value > 0:
        raise SystemExit(f"{name} must be positive; got {value}")
    return value


MAX_TOKENS = _env_int("GE_MAX_TOKENS", 512)  # longer text is truncated, with a notice
MAX_DRAWN_NODES = _env_int("GE_MAX_DRAWN_NODES", 300)  # beyond this the graph is drawn collapsed
FORWARD_BUDGET_S = _env_float("GE_FORWARD_BUDGET_S", 0.08)  # min_run_time of one forward timing
TRAIN_BUDGET_S = _env_float("GE_TRAIN_BUDGET_S", 0.10)  # min_run_time of one train-step timing
HISTORY_LENGTH = _env_int("GE_HISTORY_LENGTH", 200)  # runs kept per session for the plots


def describe() -> dict[str, float | int]:
    return {
        "max_tokens": MAX_TOKENS,
        "max_drawn_nodes": MAX_DRAWN_NODES,
        "forward_budget_s": FORWARD_BUDGET_S,
        "train_budget_s": TRAIN_BUDGET_S,
        "history_length": HISTORY_LENGTH,
    }
