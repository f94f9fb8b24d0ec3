"""A decoder-only transformer that generates bytes, with a key/value cache of three kinds (the `cache` knob).

- `none`: every step runs the whole sequence again (no cache; the graph and its shapes grow each step).
- `dynamic`: each step's keys and values are concatenated to the layer's cache (shapes grow by one a token).
- `static`: buffers preallocated to `max_positions`, written at the current position and masked beyond it (every
  decode step has the same shapes: one compiled graph serves them all).

As a zoo model its forward reads a sentence and returns the next byte's logits, (batch, 256): one row per
sentence, read at each row's last real token (`lengths`: rows right-padded). Generation
(explorer/eager/generation.py) calls `step` with a cache from `new_cache`; prompts of different lengths are padded
on the left (`pads`), their pads masked out of every attention and their positions counted from each row's first
real token, so a row gets the same logits batched as alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from models.config import ConfigError, knob
from models.tokenizer import VOCAB_SIZE

CACHES = ("none", "dynamic", "static")


@dataclass(frozen=True)
class DecoderConfig:
    layers: int = knob(2, "Decoder blocks.", min=1, max=12)
    width: int = knob(64, "Model width (d_model); a multiple of heads.", min=8, max=512, step=8)
    heads: int = knob(4, "Attention heads per block.", min=1, max=16)
    cache: str = knob("dynamic", "Generation's key/value cache: none (recompute the prefix every step), dynamic "
                      "(grows a token at a time), static (preallocated to max_positions, fixed shapes).",
                      choices=CACHES)
    max_positions: int = knob(1024, "The static cache's length: the longest prompt plus generated tokens.",
                              min=16, max=4096)
    seed: int = knob(0, "Seed of the random weights.", min=0, max=2**31 - 1)

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ConfigError(f"width ({self.width}) must be a multiple of heads ({self.heads})")


class DynamicCache:
    """Each layer's keys and values so far, one token longer after each step (a Python int counts them: compiled
    code specializes on it and on the growing shapes)."""

    def __init__(self, pads: torch.Tensor) -> None:
        self.pads = pads  # (B,) left pads per row
        self.seen = 0  # columns cached so far, pads included
        self.k: dict[int, torch.Tensor] = {}
        self.v: dict[int, torch.Tensor] = {}

    @classmethod
    def of(cls, pads: torch.Tensor, k: list[torch.Tensor], v: list[torch.Tensor]) -> DynamicCache:
        """A cache holding these keys and values (B, heads, L, head_dim) per layer."""
        cache = cls(pads)
        cache.k, cache.v, cache.seen = dict(enumerate(k)), dict(enumerate(v)), k[0].shape[2]
        return cache

    def columns(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The new queries' columns (t,) and every key's column (L,)."""
        return self.seen + torch.arange(t), torch.arange(self.seen + t)

    def keys(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if layer in self.k:
            k, v = torch.cat([self.k[layer], k], dim=2), torch.cat([self.v[layer], v], dim=2)
        self.k[layer], self.v[layer] = k, v
        return k, v

    def advance(self, t: int) -> None:
        self.seen += t

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in [*self.k.values(), *self.v.values()])


class StaticCache:
    """Keys and values in buffers of `max_positions` columns, written at the current column (a tensor, so that
    compiled code does not specialize on it); the columns not yet written are masked by causality."""

    def __init__(self, pads: torch.Tensor, layers: int, heads: int, head_dim: int, max_positions: int) -> None:
        self.pads = pads
        self.seen = torch.zeros((), dtype=torch.long)
        shape = (pads.shape[0], heads, max_positions, head_dim)
        self.k = [torch.zeros(shape) for _ in range(layers)]
        self.v = [torch.zeros(shape) for _ in range(layers)]
        self.max_positions = max_positions

    @classmethod
    def of(cls, pads: torch.Tensor, k: list[torch.Tensor], v: list[torch.Tensor], seen: torch.Tensor) -> StaticCache:
        """A cache over these buffers (B, heads, max_positions, head_dim) per layer, `seen` columns written."""
        cache = cls.__new__(cls)
        cache.pads, cache.k, cache.v, cache.seen, cache.max_positions = pads, k, v, seen, k[0].shape[2]
        return cache

    def columns(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.seen + torch.arange(t), torch.arange(self.max_positions)

    def keys(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        at = self.seen + torch.arange(k.shape[2])
        self.k[layer].index_copy_(2, at, k)
        self.v[layer].index_copy_(2, at, v)
        return self.k[layer], self.v[layer]

    def advance(self, t: int) -> None:
        if int(self.seen) + t > self.max_positions:
            raise ValueError(f"the static cache holds {self.max_positions} positions (max_positions); this step "
                             f"would reach {int(self.seen) + t}")
        self.seen += t

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in [*self.k, *self.v])


Cache = DynamicCache | StaticCache


def _angles(positions: torch.Tensor, width: int) -> torch.Tensor:
    """Sinusoidal encodings of any positions (B, t) -> (B, t, width): computed, so no table bounds the length."""
    freq = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    angle = positions[..., None].float() * freq
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)


class CausalAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, layer: int, cache: Cache, allowed: torch.Tensor) -> torch.Tensor:
        """x: (B, t, D) the new tokens; `allowed` (B, 1, t, L): the keys each new token may read."""
        q, k, v = (t.unflatten(-1, (self.heads, -1)).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        k, v = cache.keys(layer, k, v)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, float("-inf"))
        return self.out((scores.softmax(dim=-1) @ v).transpose(1, 2).flatten(-2))


class DecoderBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = CausalAttention(width, heads)
        self.ffn = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor, layer: int, cache: Cache, allowed: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), layer, cache, allowed)
        return x + self.ffn(self.norm2(x))


class Decoder(nn.Module):
    def __init__(self, cfg: DecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(VOCAB_SIZE, cfg.width)
        self.blocks = nn.ModuleList(DecoderBlock(cfg.width, cfg.heads) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, VOCAB_SIZE)

    def new_cache(self, pads: torch.Tensor, kind: str | None = None) -> Cache:
        """An empty cache of `kind` (the config's by default) for rows with `pads` left pads each; `none` gets a
        dynamic one, which generation throws away after every step."""
        kind = kind or self.cfg.cache
        if kind == "static":
            return StaticCache(pads, self.cfg.layers, self.cfg.heads, self.cfg.width // self.cfg.heads,
                               self.cfg.max_positions)
        return DynamicCache(pads)

    def step(self, ids: torch.Tensor, cache: Cache) -> torch.Tensor:
        """The logits (B, t, 256) of the new tokens `ids` (B, t), which follow what `cache` holds; the cache then
        holds them too (its `advance` is the caller's, after the step: compiled code leaves it to eager)."""
        queries, keys = cache.columns(ids.shape[1])
        real = keys[None, :] >= cache.pads[:, None]  # (B, L): a left pad is no key
        causal = keys[None, :] <= queries[:, None]  # (t, L)
        mine = keys[None, :] == queries[:, None]  # a pad's query reads itself: no row of only -inf
        allowed = (causal[None] & (real[:, None, :] | mine[None]))[:, None]  # (B, 1, t, L)
        positions = (queries[None, :] - cache.pads[:, None]).clamp(min=0)
        x = self.embed(ids) + _angles(positions, self.cfg.width)
        for i, block in enumerate(self.blocks):
            x = block(x, i, cache, allowed)
        return self.head(self.norm(x))

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """ids: (B, T): the next byte's logits after each row, (B, 256), read at its last real token (with
        `lengths`, rows are right-padded: causality keeps the pads out of every real token's attention)."""
        logits = self.step(ids, DynamicCache(torch.zeros(ids.shape[0], dtype=torch.long)))
        last = (lengths - 1) if lengths is not None else torch.full((ids.shape[0],), ids.shape[1] - 1)
        return logits[torch.arange(ids.shape[0]), last]


class StaticStep(nn.Module):
    """One decode step over a static cache given as tensors (what an exported program takes): the new token per
    row (B, 1), the columns written so far (a 0-d tensor), each row's pads, then every layer's key buffers and
    every layer's value buffers, written in place at the position. Returns the token's logits (B, 256)."""

    def __init__(self, decoder: Decoder) -> None:
        super().__init__()
        self.decoder = decoder

    def forward(self, token: torch.Tensor, seen: torch.Tensor, pads: torch.Tensor, *kv: torch.Tensor
                ) -> torch.Tensor:
        layers = len(kv) // 2
        return self.decoder.step(token, StaticCache.of(pads, list(kv[:layers]), list(kv[layers:]), seen))[:, -1]


class DynamicStep(nn.Module):
    """One decode step over a dynamic cache given as tensors: the new token per row (B, 1), each row's pads, then
    every layer's keys and every layer's values so far (B, heads, L, head_dim). Returns the token's logits and
    the caches one column longer."""

    def __init__(self, decoder: Decoder) -> None:
        super().__init__()
        self.decoder = decoder

    def forward(self, token: torch.Tensor, pads: torch.Tensor, *kv: torch.Tensor) -> tuple[torch.Tensor, ...]:
        layers = len(kv) // 2
        cache = DynamicCache.of(pads, list(kv[:layers]), list(kv[layers:]))
        logits = self.decoder.step(token, cache)[:, -1]
        return (logits, *cache.k.values(), *cache.v.values())


def cache_bytes(layers: int, width: int, batch: int, positions: int) -> int:
    """Bytes of a cache holding `positions` columns for `batch` rows (float32 keys and values of `width` per
    position, every layer)."""
    return 4 * 2 * layers * batch * positions * width


def activation_bytes(cfg: DecoderConfig, tokens: int, batch: int = 1) -> int:
    """Upper bound of the bytes a train step saves for backward (float32; checked in tests/test_limits.py): per
    block, the linear and norm inputs, residuals and the FFN's hidden layer grow with tokens x width, the masked
    scores and their softmax with heads x tokens^2 (and the mask's booleans)."""
    block = tokens * cfg.width * 16 + 3 * cfg.heads * tokens**2
    return 4 * batch * (2 * tokens * cfg.width + cfg.layers * block + tokens * VOCAB_SIZE)
