"""Bucket boundaries for a workload: each request is padded up to the smallest boundary at or above its length, and
each boundary is one more shape to compile. The plan minimises the workload's cost

    compile_s x (boundaries) + token_s x (tokens computed, pads included)

by dynamic programming over the distinct lengths (a boundary is best placed at a length that occurs: moving it down
to the longest request it serves pads less and compiles the same). Power-of-two buckets are the usual guess."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    boundaries: tuple[int, ...]
    computed_tokens: int  # tokens run over the workload, pads included
    real_tokens: int

    def cost(self, compile_s: float, token_s: float) -> float:
        return compile_s * len(self.boundaries) + token_s * self.computed_tokens

    @property
    def padded_share(self) -> float:
        """The share of the computed tokens that are pads."""
        return 1 - self.real_tokens / self.computed_tokens

    def bucket(self, length: int) -> int:
        """The boundary a request of `length` is padded to."""
        return next(b for b in self.boundaries if b >= length)


def plan_of(lengths: Sequence[int], boundaries: Sequence[int]) -> Plan:
    """The plan with these boundaries (the longest request's length is added if none reaches it)."""
    top = max(lengths)
    kept = sorted({b for b in boundaries if b < top} | {top})
    by = Plan(tuple(kept), 0, sum(lengths))
    return Plan(by.boundaries, sum(by.bucket(n) for n in lengths), by.real_tokens)


def planned(lengths: Sequence[int], compile_s: float, token_s: float) -> Plan:
    """The boundaries of least cost for `lengths` (each a request's token count), given the seconds one more
    compiled shape costs and the seconds a computed token costs. O(m^2) in the m distinct lengths."""
    if not lengths or min(lengths) < 1:
        raise ValueError("a workload is at least one request of at least one token")
    counts = Counter(lengths)
    distinct = sorted(counts)
    # best[j]: the least cost of serving every request up to distinct[j - 1] with a boundary there; cut[j]: the
    # index of the boundary before it (0: none).
    best, cut = [0.0] + [float("inf")] * len(distinct), [0] * (len(distinct) + 1)
    for j in range(1, len(distinct) + 1):
        served = 0  # requests with lengths in distinct[i:j], padded to distinct[j - 1]
        for i in range(j - 1, -1, -1):
            served += counts[distinct[i]]
            cost = best[i] + compile_s + token_s * distinct[j - 1] * served
            if cost < best[j]:
                best[j], cut[j] = cost, i
    chosen, j = [], len(distinct)
    while j > 0:
        chosen.append(distinct[j - 1])
        j = cut[j]
    return plan_of(lengths, chosen)


def powers_of_two(lengths: Sequence[int]) -> Plan:
    """Buckets at 1, 2, 4, ... up to the longest request (the last one at its length, not past it)."""
    top, bounds, b = max(lengths), [], 1
    while b < top:
        bounds.append(b)
        b *= 2
    return plan_of(lengths, [x for x in bounds if any(x >= n and x // 2 < n for n in lengths)])
