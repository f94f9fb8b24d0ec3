"""Saying no to too much activation memory, known before anything runs from each model's own upper bound (checked
through the model contract, `explorer.sources.registry`, against measured saved bytes in the tests)."""

from __future__ import annotations

from explorer.core.limits import MAX_ACTIVATION_BYTES


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.0f} MiB"


def over_memory_note(need: int) -> str | None:
    """A note when `need` bytes of activations is over the limit, else None."""
    if need <= MAX_ACTIVATION_BYTES:
        return None
    return (f"over the memory limit: a train step would keep ~{gib(need)} of activations for backward "
            f"(limit {gib(MAX_ACTIVATION_BYTES)}, GE_MAX_ACTIVATION_BYTES)")
