"""Refusing what would take the server down: too many parameters, too much activation memory.

Both are known before anything runs: parameters are counted on the meta device, activation memory is each
model's own upper bound (`models.*.activation_bytes`, checked against measured saved bytes in the tests)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torch import nn

from explorer.core.errors import InputError
from explorer.core.limits import MAX_ACTIVATION_BYTES, MAX_PARAMS, MAX_TOKENS
from models import ZOO, ModelEntry, entry, param_count


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.0f} MiB"


def check_architecture(model: str, config: Any) -> None:
    """Raise InputError if this architecture is over the parameter limit, or would be over the memory
    limit on an input of the maximum length."""
    params = param_count(model, config)
    if params > MAX_PARAMS:
        raise InputError(f"this architecture has {params:,} parameters; the limit is {MAX_PARAMS:,} "
                         "(GE_MAX_PARAMS). Make it narrower or shallower.")
    need = entry(model).activation_bytes(config, MAX_TOKENS, 1)
    if need > MAX_ACTIVATION_BYTES:
        raise InputError(f"at {MAX_TOKENS} tokens this architecture would keep ~{_gib(need)} of activations for "
                         f"backward; the limit is {_gib(MAX_ACTIVATION_BYTES)} (GE_MAX_ACTIVATION_BYTES). "
                         "Use fewer layers, heads or a smaller width.")


def warm_param_count() -> None:
    """Pay the meta device's one-time set-up (importing torch's reference ops, seconds) ahead of the first
    architecture change."""
    param_count("rnn", entry("rnn").config_cls())


def _entry_of(model: nn.Module) -> ModelEntry:
    return next(e for e in ZOO.values() if isinstance(model, e.model_cls))


def batch_activation_bytes(model: nn.Module, shapes: Iterable[tuple[int, int]]) -> int:
    """Estimated bytes saved for backward by one train step over padded calls of these (batch, tokens)."""
    estimate = _entry_of(model).activation_bytes
    return sum(estimate(model.cfg, tokens, batch) for batch, tokens in shapes)


def over_memory_note(need: int) -> str | None:
    """A note when `need` bytes of activations is over the limit, else None."""
    if need <= MAX_ACTIVATION_BYTES:
        return None
    return (f"over the memory limit: a train step would keep ~{_gib(need)} of activations for backward "
            f"(limit {_gib(MAX_ACTIVATION_BYTES)}, GE_MAX_ACTIVATION_BYTES)")
