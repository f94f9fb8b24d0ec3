"""Byte-level tokenizer: every UTF-8 byte is one token, so any text is valid input."""

from __future__ import annotations

import torch

VOCAB_SIZE = 256


def encode(text: str) -> list[int]:
    """Token ids of `text` (its UTF-8 bytes). Raises UnicodeEncodeError on lone surrogates."""
    return list(text.encode("utf-8"))


def to_ids(text: str) -> torch.Tensor:
    """A (1, T) int64 batch of one sequence."""
    return torch.tensor([encode(text)], dtype=torch.long)


def token_labels(text: str) -> list[str]:
    """A printable label per token: the character a byte starts, or a continuation marker."""
    labels = []
    for ch in text:
        raw = ch.encode("utf-8")
        labels.append(ch if ch.isprintable() else repr(ch)[1:-1])
        labels.extend(f"+{b:02x}" for b in raw[1:])
    return labels
