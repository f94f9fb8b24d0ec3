"""Transformer encoder written out op by op, over exactly the tokens given (no padding).

nn.TransformerEncoderLayer takes a fused fast path in eval mode that shows up as one node; writing
attention out (or calling SDPA explicitly) keeps every real op visible in the autograd graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from models.config import ConfigError, knob
from models.heads import NUM_CLASSES
from models.tokenizer import VOCAB_SIZE

_ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}


@dataclass(frozen=True)
class TransformerConfig:
    layers: int = knob(2, "Encoder blocks.", min=1, max=12)
    width: int = knob(64, "Model width (d_model); a multiple of heads.", min=8, max=512, step=8)
    heads: int = knob(4, "Attention heads per block.", min=1, max=16)
    ffn_ratio: int = knob(4, "Feed-forward hidden size as a multiple of the width.", min=1, max=8)
    norm: str = knob("pre", "LayerNorm before (pre) or after (post) each sublayer.", choices=("pre", "post"))
    activation: str = knob("gelu", "Feed-forward activation.", choices=("gelu", "relu"))
    attention: str = knob(
        "math", "math: matmul + softmax written out; sdpa: one fused attention op.", choices=("math", "sdpa")
    )
    seed: int = knob(0, "Seed of the random weights.", min=0, max=2**31 - 1)

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ConfigError(f"width ({self.width}) must be a multiple of heads ({self.heads})")


class SelfAttention(nn.Module):
    def __init__(self, width: int, heads: int, impl: str):
        super().__init__()
        self.heads, self.impl = heads, impl
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        """(B, T, D) -> (B, heads, T, D/heads). Written with unflatten/transpose, not view/permute, so a
        jagged nested tensor (ragged T) goes through too; SDPA wants its heads contiguous then."""
        t = t.contiguous() if t.is_nested else t
        return t.unflatten(-1, (self.heads, t.shape[-1] // self.heads)).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """mask: (B, T) True at real tokens; padded keys get no attention."""
        d = x.shape[-1]
        q, k, v = (self._heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        keys = None if mask is None else mask[:, None, None, :]
        if self.impl == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=keys)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
            if keys is not None:
                scores = scores.masked_fill(~keys, float("-inf"))
            y = scores.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).flatten(-2))


class EncoderBlock(nn.Module):
    def __init__(self, width: int, heads: int, ffn_ratio: int, norm: str, activation: str, attention: str):
        super().__init__()
        self.pre_norm = norm == "pre"
        self.attn = SelfAttention(width, heads, attention)
        self.norm1 = nn.LayerNorm(width)
        self.ffn = nn.Sequential(
            nn.Linear(width, ffn_ratio * width), _ACTIVATIONS[activation](), nn.Linear(ffn_ratio * width, width)
        )
        self.norm2 = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.attn(self.norm1(x), mask)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.ffn(x))


def padding_mask(ids: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T) True at real tokens, or None for an unpadded batch."""
    return None if lengths is None else torch.arange(ids.shape[1])[None, :] < lengths[:, None]


def mean_tokens(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean over the real tokens of each row."""
    if mask is None:
        return x.mean(dim=1)
    m = mask[..., None].to(x.dtype)
    return (x * m).sum(dim=1) / m.sum(dim=1)


def sinusoidal_positions(length: int, width: int) -> torch.Tensor:
    """Fixed position encodings for any length (no learned table, so no length limit)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    enc = torch.zeros(length, width)
    enc[:, 0::2] = torch.sin(pos * freq)
    enc[:, 1::2] = torch.cos(pos * freq[: width // 2])
    return enc


class TokenEmbedding(nn.Module):
    """Byte embedding plus sinusoidal positions."""

    def __init__(self, width: int):
        super().__init__()
        self.table = nn.Embedding(VOCAB_SIZE, width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.table(ids)
        if not ids.is_nested:
            return x + sinusoidal_positions(ids.shape[1], x.shape[-1])
        # A jagged batch: each sentence's positions count from 0, laid out like its tokens.
        offsets = ids.offsets()
        lengths = offsets.diff().tolist()
        table = sinusoidal_positions(max(lengths), x.shape[-1])
        positions = torch.cat([torch.arange(n) for n in lengths])
        return x + torch.nested.nested_tensor_from_jagged(table[positions], offsets)


class TransformerEncoder(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = TokenEmbedding(cfg.width)
        self.blocks = nn.ModuleList(
            EncoderBlock(cfg.width, cfg.heads, cfg.ffn_ratio, cfg.norm, cfg.activation, cfg.attention)
            for _ in range(cfg.layers)
        )
        self.norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, NUM_CLASSES)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """ids: (B, T). With `lengths`, rows are right-padded and pads are masked out."""
        mask = padding_mask(ids, lengths)
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(mean_tokens(x, mask)))


def block_activation_floats(width: int, heads: int, ffn_ratio: int, attention: str, tokens: int) -> int:
    """Upper bound of the floats one encoder block saves for backward per sequence.

    Linear and norm inputs, residuals and the FFN's hidden layer (before and after the activation) grow
    with tokens x width; the attention scores and their softmax with heads x tokens^2 (SDPA keeps less)."""
    return tokens * width * (8 + 2 * ffn_ratio) + (2 if attention == "math" else 1) * heads * tokens**2


def activation_bytes(cfg: TransformerConfig, tokens: int, batch: int = 1) -> int:
    """Upper bound of the bytes a train step saves for backward (float32; checked in tests/test_limits.py)."""
    blocks = cfg.layers * block_activation_floats(cfg.width, cfg.heads, cfg.ffn_ratio, cfg.attention, tokens)
    return 4 * batch * (2 * tokens * cfg.width + blocks)
