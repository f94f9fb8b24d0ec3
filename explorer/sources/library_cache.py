"""A `transformers` decoder (GPT-2, Llama) generating with the library's own key/value caches, behind the interface
the generation lab reads from the zoo's decoder (models/decoder.py): `new_cache(pads, kind)`, then `step(ids,
cache)` for the new tokens, then `cache.advance(t)`.

- `dynamic`: the library's `DynamicCache`, each layer's keys and values concatenated a step at a time.
- `static`: its `StaticCache`, preallocated to the model's positions and written at `cache_position`; the columns
  written so far are a tensor and the attention mask covers every column, so a decode step's shapes never change.
- `none`: a `DynamicCache` thrown away after every step (the whole sequence again).

Left pads are masked (`attention_mask`) and positions count from each row's first real byte (`position_ids`), as
in the zoo's decoder: a row generates the same batched as alone."""

from __future__ import annotations

import torch
from transformers import DynamicCache, StaticCache


class LibraryCache:
    """The library's cache of one kind, with the rows' pads and the columns it holds."""

    def __init__(self, config: object, pads: torch.Tensor, kind: str, positions: int) -> None:
        self.pads, self.kind, self.positions = pads, kind, positions
        if kind == "static":
            self.held = StaticCache(config=config, max_cache_len=positions)
            self.seen: int | torch.Tensor = torch.zeros((), dtype=torch.long)  # compiled code must not specialize
        else:
            self.held = DynamicCache(config=config)
            self.seen = 0

    def inputs(self, t: int) -> dict[str, torch.Tensor]:
        """The forward's mask, positions and cache columns for `t` new tokens after those held."""
        columns = self.seen + torch.arange(t)
        keys = torch.arange(self.positions if self.kind == "static" else self.seen + t)
        return {"attention_mask": (keys[None, :] >= self.pads[:, None]).long(),
                "position_ids": (columns[None, :] - self.pads[:, None]).clamp(min=0), "cache_position": columns}

    def advance(self, t: int) -> None:
        if int(self.seen) + t > self.positions:
            raise ValueError(f"the static cache holds {self.positions} positions; this step would reach "
                             f"{int(self.seen) + t}")
        self.seen += t

    def nbytes(self) -> int:
        layers = getattr(self.held, "layers", [])
        return sum(t.numel() * t.element_size() for layer in layers
                   for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
                   if isinstance(t, torch.Tensor))
