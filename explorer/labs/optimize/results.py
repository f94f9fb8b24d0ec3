"""What serving the workload measured, and what follows from the numbers: per strategy the time to serve the whole
stream (compiles included), its compiles, the requests after its last compile (its warm latency, p50 and p95),
the padded work, the peak memory, its outputs against eager's; compared with eager request by request; and the
recommendation, said only where an interval decides it. A strategy that changes answers is flagged, never ranked."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from explorer.eager.compare import CONFIDENCE, RESAMPLES, Comparison
from explorer.labs.optimize.job import Costs, Served
from explorer.labs.optimize.planner import Plan
from explorer.labs.optimize.workload import Workload

SAME_ANSWERS = 1e-4  # max |output - eager's| past this: the strategy changes answers


def _q(ms: list[float], p: float) -> float:
    """The p-th quantile (0-1) of `ms`, by the nearest rank (p95 of 20 requests: the 19th)."""
    ranked = sorted(ms)
    return ranked[max(0, math.ceil(p * len(ranked)) - 1)]


def _iqr(ms: list[float]) -> float | None:
    if len(ms) < 2:
        return None
    q1, _, q3 = statistics.quantiles(ms, n=4)
    return q3 - q1


@dataclass(frozen=True)
class Totals:
    """Strategy `a` against `b` over the whole stream, request by request: the ratio of their totals (above 1: `b`
    serves it faster) with its bootstrap interval over the requests."""

    a: str
    b: str
    ratio: float
    low: float
    high: float

    @property
    def faster(self) -> str | None:
        return self.b if self.low > 1 else self.a if self.high < 1 else None

    def said(self) -> str:
        if self.faster is None:
            return (f"no difference between {self.a} and {self.b} resolved over the stream ({self.ratio:.2f}x, 95% "
                    f"interval {self.low:.2f}-{self.high:.2f}x)")
        slow, fast, r = (self.a, self.b, (self.ratio, self.low, self.high)) if self.faster == self.b else \
            (self.b, self.a, (1 / self.ratio, 1 / self.high, 1 / self.low))
        return f"{fast} serves the stream {r[0]:.2f}x as fast as {slow} (95% interval {r[1]:.2f}-{r[2]:.2f}x)"


def totals(a: Served, b: Served, resamples: int = RESAMPLES, seed: int = 0) -> Totals:
    """The ratio of the two totals, compiles included. Its interval: the requests at which either compiled (one
    measurement each, the set-up with them) are kept as they were; the other requests are resampled, each with both
    strategies' seconds for it, so the interval carries the per-request noise and not a compile's absence."""
    fixed = {c.at for c in (*a.compiles, *b.compiles) if c.at < len(a.seconds)}
    rest = [i for i in range(len(a.seconds)) if i not in fixed]
    base_a = a.build_s + sum(a.seconds[i] for i in fixed)
    base_b = b.build_s + sum(b.seconds[i] for i in fixed)
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples if rest else 1):
        picks = [rest[rng.randrange(len(rest))] for _ in rest]
        ratios.append((base_a + sum(a.seconds[i] for i in picks)) / (base_b + sum(b.seconds[i] for i in picks)))
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    low, high = ratios[int(tail * (len(ratios) - 1))], ratios[int((1 - tail) * (len(ratios) - 1))]
    return Totals(a.strategy, b.strategy, a.total_s / b.total_s, low, high)


@dataclass
class OptimizeResult:
    model: str
    config: dict[str, Any]
    workload: Workload
    backend: str
    costs: Costs
    plans: dict[str, Plan]
    fresh: bool  # each strategy served in a fresh worker process (else one after another in one process)
    served: list[Served] = field(default_factory=list)

    def warm(self, s: Served) -> list[int]:
        """The requests after its last compile (all of them for a strategy that never compiled)."""
        last = max((c.at for c in s.compiles), default=-1)
        return list(range(last + 1, len(s.seconds)))

    def steady(self, s: Served) -> Comparison | None:
        """Eager against the strategy on its warm requests, each pair timed back to back in its process."""
        warm = self.warm(s)
        if s.strategy == "eager" or len(warm) < 2:
            return None
        return Comparison.of("eager", s.strategy, [s.eager_s[i] * 1e3 for i in warm],
                             [s.seconds[i] * 1e3 for i in warm], threads=s.threads, cores=s.cores)

    def catches_up(self, s: Served) -> int | None:
        """The request count from which its total so far stays at or below eager's (eager's seconds timed beside it
        in its process); None if it had not caught up by the end of the stream."""
        ahead, caught = 0.0, None
        for i, (mine, eager) in enumerate(zip(s.seconds, s.eager_s, strict=True)):
            ahead += mine - eager
            caught = (caught if caught is not None else i + 1) if ahead <= 0 else None
        return caught

    def break_even(self, s: Served) -> int | None:
        """Past the stream, the requests after which its total would reach eager's: what it is behind at the end,
        over the median time a warm request saves. Only where it is faster than eager warm by its interval."""
        steady = self.steady(s)
        if steady is None or steady.faster != s.strategy or self.catches_up(s) is not None:
            return None
        behind = s.total_s - sum(s.eager_s)
        saved = (statistics.median(steady.a_ms) - statistics.median(steady.b_ms)) / 1e3
        return len(s.seconds) + math.ceil(behind / saved)

    def ranked(self) -> list[Served]:
        """The strategies that served the whole stream with eager's answers, fastest total first."""
        ok = [s for s in self.served if self.usable(s)]
        return sorted(ok, key=lambda s: s.total_s)

    @staticmethod
    def usable(s: Served) -> bool:
        return not s.skipped and not s.error and s.max_diff <= SAME_ANSWERS

    def recommendation(self) -> str:
        ranked = self.ranked()
        if not ranked:
            return "No strategy served the whole stream with eager's answers."
        best = ranked[0]
        said = [f"Fastest to serve this workload: **{best.strategy}**, {best.total_s:.2f} s for "
                f"{len(best.seconds)} requests, compiles included"]
        if len(ranked) > 1:
            said.append(totals(ranked[1], best).said())
        by_p95 = [(self._p95(s), s) for s in ranked if self.warm(s)]
        if by_p95:
            p95, quickest = min(by_p95, key=lambda x: x[0])
            after = "after its last compile" if quickest.compiles else "(it compiles nothing)"
            said.append(f"best p95 after warm-up: **{quickest.strategy}**, {p95:.3f} ms over "
                        f"{len(self.warm(quickest))} requests {after}")
        flagged = [s.strategy for s in self.served if not s.skipped and not s.error and s.max_diff > SAME_ANSWERS]
        if flagged:
            said.append(f"changes answers (not ranked): {', '.join(flagged)}")
        return "; ".join(said) + "."

    def _p95(self, s: Served) -> float:
        return _q([s.seconds[i] * 1e3 for i in self.warm(s)], 0.95)

    def row(self, s: Served) -> dict[str, Any]:
        """One strategy's figures, as the table, the CLI and the JSON report show them."""
        warm_ms = [s.seconds[i] * 1e3 for i in self.warm(s)]
        steady = self.steady(s)
        real = sum(self.workload.lengths)
        return {"strategy": s.strategy, "skipped": s.skipped, "error": s.error, "total_s": s.total_s,
                "compiles": len(s.compiles), "compile_s": sum(c.seconds for c in s.compiles),
                "requests": len(s.seconds), "compiled_requests": sum(s.compiled), "warm_requests": len(warm_ms),
                "p50_ms": statistics.median(warm_ms) if warm_ms else None,
                "p95_ms": _q(warm_ms, 0.95) if warm_ms else None,
                "iqr_ms": _iqr(warm_ms),
                "padded_share": 1 - real / s.computed_tokens if s.computed_tokens else None,
                "peak_rss_mb": s.peak_rss_mb, "cache_hits": s.cache_hits, "cache_misses": s.cache_misses,
                "max_diff": s.max_diff, "same_answers": s.max_diff <= SAME_ANSWERS,
                "steady_vs_eager": steady.as_dict() if steady else None, "catches_up_at": self.catches_up(s),
                "break_even_requests": self.break_even(s)}

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "config": self.config, "backend": self.backend, "fresh": self.fresh,
                "workload": {"lengths": list(self.workload.lengths), "source": self.workload.source,
                             "described": self.workload.describe()},
                "costs": asdict(self.costs),
                "plans": {name: {"boundaries": list(p.boundaries), "padded_share": p.padded_share}
                          for name, p in self.plans.items()},
                "strategies": [self.row(s) for s in self.served],
                "served": [asdict(s) | {"artifacts": len(s.artifacts)} for s in self.served],  # bytes: counted
                "recommendation": self.recommendation()}
