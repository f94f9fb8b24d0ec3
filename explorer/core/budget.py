"""Refusing a batch that would take the server down: too much activation memory, known before anything runs from
each model's own upper bound (`models.*.activation_bytes`, checked against measured saved bytes in the tests).
An architecture's own bounds are checked through the model contract (`explorer.sources.registry`)."""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn

from explorer.core.limits import MAX_ACTIVATION_BYTES
from models import ZOO, ModelEntry


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.0f} MiB"


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
    return (f"over the memory limit: a train step would keep ~{gib(need)} of activations for backward "
            f"(limit {gib(MAX_ACTIVATION_BYTES)}, GE_MAX_ACTIVATION_BYTES)")
