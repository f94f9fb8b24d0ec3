"""Bucket boundaries for a workload: each request is padded up to the smallest boundary at or above its length, and
each boundary is one more shape to compile. The plan minimises the workload's cost

    sum of compile_s(boundary) over the boundaries + token_s x (tokens computed, pads included)

by dynamic programming over the distinct lengths (a boundary is best placed at a length that occurs: moving it down
to the longest request it serves pads less and compiles no dearer). A compile's seconds grow with the length where the
forward unrolls a loop (the RNN's Python loop: 1 s at 8 tokens, 15 s at 120), so they are measured at two lengths.
Power-of-two buckets are the usual guess."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Costs:
    """The planner's weights, measured in a fresh process as each strategy runs: a static compile of the model at the
    workload's longest request (the process's first, as every plan's longest boundary is) and at its shortest, and
    the compiled forward's seconds per token."""

    short: int
    short_s: float
    long: int
    long_s: float
    token_s: float

    def compile_s(self, length: int) -> float:
        """A static compile at `length`: on the line through the two measured ones, never below the cheaper."""
        if self.long == self.short:
            return self.long_s
        slope = (self.long_s - self.short_s) / (self.long - self.short)
        return max(min(self.short_s, self.long_s), self.short_s + slope * (length - self.short))

    @classmethod
    def flat(cls, compile_s: float, token_s: float) -> Costs:
        """Weights whose compile costs the same at every length."""
        return cls(1, compile_s, 1, compile_s, token_s)

    def said(self) -> str:
        return (f"a static compile {self.long_s:.2f} s at {self.long} tokens (a fresh process's first) and "
                f"{self.short_s:.2f} s at {self.short}, {self.token_s * 1e6:.2f} µs per token compiled")


@dataclass(frozen=True)
class Plan:
    boundaries: tuple[int, ...]
    computed_tokens: int  # tokens run over the workload, pads included
    real_tokens: int

    def cost(self, costs: Costs) -> float:
        """The predicted seconds to serve the workload: a compile per boundary and every computed token."""
        return sum(costs.compile_s(b) for b in self.boundaries) + costs.token_s * self.computed_tokens

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


def planned(lengths: Sequence[int], costs: Costs) -> Plan:
    """The boundaries of least cost for `lengths` (each a request's token count), given the seconds a compiled
    shape costs at each length and the seconds a computed token costs. O(m^2) in the m distinct lengths."""
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
            cost = best[i] + costs.compile_s(distinct[j - 1]) + costs.token_s * distinct[j - 1] * served
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
