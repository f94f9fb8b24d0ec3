"""Batches of sentences, shared by the labs: typed lines, or N generated ones with lengths from a distribution;
their token ids, and the ids padded into one tensor."""

from __future__ import annotations

import random

import torch

from explorer.core.errors import InputError
from explorer.core.inputs import check_text, tokenize
from explorer.core.limits import MAX_BATCH, MAX_TOKENS

DISTRIBUTIONS = ("uniform", "zipf", "bimodal")
_WORDS = (
    "the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "graphs", "grow", "with", "every",
    "token", "and", "loops", "unroll", "one", "step", "at", "a", "time", "so", "padding", "wastes", "work",
)


def generate_lengths(n: int, distribution: str, min_len: int, max_len: int, seed: int = 0) -> list[int]:
    if distribution not in DISTRIBUTIONS:
        raise InputError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}; got {distribution!r}")
    if not 1 <= n <= MAX_BATCH:
        raise InputError(f"the batch size must be between 1 and {MAX_BATCH}; got {n}")
    if not 1 <= min_len <= max_len <= MAX_TOKENS:
        raise InputError(f"lengths must satisfy 1 <= min <= max <= {MAX_TOKENS}; got {min_len}..{max_len}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if distribution == "uniform":
            length = rng.randint(min_len, max_len)
        elif distribution == "zipf":  # heavy tail: many short sentences, a few very long ones
            length = int(min_len / (1.0 - rng.random()) ** (1 / 1.1))
        else:  # bimodal: short chat-like lines and long paragraphs
            centre = min_len + 0.1 * (max_len - min_len) if rng.random() < 0.6 else min_len + 0.8 * (max_len - min_len)
            length = int(rng.gauss(centre, 0.05 * (max_len - min_len) + 1))
        out.append(max(min_len, min(max_len, length)))
    return out


def sentence(length: int, seed: int) -> str:
    """A deterministic ASCII sentence of exactly `length` bytes."""
    rng = random.Random(seed)
    text = ""
    while len(text) < length:
        text += rng.choice(_WORDS) + " "
    return text[: length - 1] + "." if length > 1 else "."


def generate_batch(n: int, distribution: str, min_len: int = 5, max_len: int = 300, seed: int = 0) -> list[str]:
    return [sentence(n_, seed * 100_003 + i) for i, n_ in enumerate(generate_lengths(n, distribution, min_len,
                                                                                      max_len, seed))]


def batch_from_lines(text: str) -> list[str]:
    lines = [ln for ln in check_text(text, "batch").splitlines() if ln.strip()]
    if not lines:
        raise InputError("Type one sentence per line, or generate a batch.")
    if len(lines) > MAX_BATCH:
        raise InputError(f"at most {MAX_BATCH} sentences per batch; got {len(lines)}")
    return lines


def token_ids(texts: list[str]) -> list[list[int]]:
    if not texts:
        raise InputError("the batch is empty: type one sentence per line, or generate a batch")
    if len(texts) > MAX_BATCH:
        raise InputError(f"at most {MAX_BATCH} sentences per batch; got {len(texts)}")
    return [tokenize(t, f"sentence {i + 1}").ids[0].tolist() for i, t in enumerate(texts)]


def pad_ids(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in seqs])
    out = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out, lengths
