"""A workload (the optimization and shapes labs take one): a stream of requests, one sentence each, in a fixed order,
their lengths drawn from a distribution, typed, or read from a file of lengths (one per line: a dataset's token
counts). Each request's text is the default text repeated or cut to its length, so every strategy serves the same
bytes."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.core.batches import DISTRIBUTIONS, generate_lengths
from explorer.core.errors import InputError
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.core.limits import MAX_TOKENS
from models.config import knob

MAX_REQUESTS = 1_000


@dataclass(frozen=True)
class Workload:
    lengths: tuple[int, ...]  # each request's token count, in the order served
    source: str  # how they were made, in words

    @property
    def texts(self) -> list[str]:
        return [text_of_length(DEFAULT_TEXT, n) for n in self.lengths]

    def describe(self) -> str:
        ls = sorted(self.lengths)
        return (f"{len(ls)} requests ({self.source}): {ls[0]}-{ls[-1]} tokens, median {ls[len(ls) // 2]}, "
                f"{len(set(ls))} distinct lengths")


def workload(source: str, n: int, min_len: int, max_len: int, typed: str = "", seed: int = 0) -> Workload:
    """The lengths `typed` (numbers separated by commas, spaces or lines: a file's lines too), when there are any;
    else `n` requests of lengths drawn from `source` (uniform, zipf, bimodal) between `min_len` and `max_len`."""
    if typed.strip():
        return Workload(typed_lengths(typed), "typed")
    if source not in DISTRIBUTIONS:
        raise InputError(f"lengths come from one of {', '.join(DISTRIBUTIONS)}; got {source!r}")
    if not 1 <= n <= MAX_REQUESTS:
        raise InputError(f"a workload is 1 to {MAX_REQUESTS:,} requests; got {n}")
    lengths: list[int] = []
    while len(lengths) < n:  # the distribution's generator draws batches of at most GE_MAX_BATCH
        lengths += generate_lengths(min(n - len(lengths), 256), source, min_len, max_len, seed + len(lengths))
    return Workload(tuple(lengths), f"{source} {min_len}-{max_len}, seed {seed}")


def typed_lengths(text: str) -> tuple[int, ...]:
    """Lengths typed as numbers separated by commas, spaces or lines, each 1 to the token limit (refused in one
    line otherwise)."""
    words = text.replace(",", " ").split()
    if len(words) > MAX_REQUESTS:
        raise InputError(f"a workload is at most {MAX_REQUESTS:,} requests; got {len(words):,}")
    try:
        lengths = tuple(int(w) for w in words)
    except ValueError:
        bad = next(w for w in words if not w.lstrip("-").isdigit())
        raise InputError(f"a length is a whole number of tokens; got {bad[:20]!r}") from None
    if not all(1 <= n <= MAX_TOKENS for n in lengths):
        raise InputError(f"each length must be 1 to {MAX_TOKENS} tokens (GE_MAX_TOKENS); got "
                         f"{next(n for n in lengths if not 1 <= n <= MAX_TOKENS)}")
    return lengths


@dataclass(frozen=True)
class StreamParams:
    """A stream of requests as a lab's parameters take it (the lab's own parameters follow these)."""

    lengths_from: str = knob("zipf", "the distribution the requests' lengths are drawn from (typed lengths, below, "
                             "take its place)", choices=DISTRIBUTIONS)
    n: int = knob(200, "requests in the stream (a distribution's)", min=1, max=MAX_REQUESTS)
    min_len: int = knob(5, "the shortest request (a distribution's), tokens", min=1, max=MAX_TOKENS)
    max_len: int = knob(120, "the longest request (a distribution's), tokens", min=1, max=MAX_TOKENS)
    seed: int = knob(0, "the distribution's seed: the same stream every time", min=0, max=2**31 - 1)
    lengths: str = knob("", "your requests' lengths in the order served, numbers separated by commas, spaces or "
                        "lines: a dataset's token counts (the CLI reads a file); empty: drawn from the distribution",
                        most=20_000, file=True)

    def workload(self) -> Workload:
        return workload(self.lengths_from, self.n, self.min_len, self.max_len, self.lengths, self.seed)
