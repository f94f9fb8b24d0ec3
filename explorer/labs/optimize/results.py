"""What serving the workload measured, and what follows from the numbers: per strategy the time to serve the whole
stream (compiles included), its compiles, the requests after its last compile (its warm latency, p50 and p95),
the padded work, the peak memory, its outputs against eager's; compared with eager over blocks of consecutive
requests (requests next to each other share the machine's slow spells: a block is the independent unit); and the
recommendation, said only where an interval decides it: a winner only when it serves the stream faster than the
runner-up by the whole interval, else the group no interval separated. A strategy that changes answers is flagged,
never ranked."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from explorer.compile.observe import cache_said
from explorer.core.workload import Workload
from explorer.eager.compare import CONFIDENCE, MIN_PAIRS, TARGET_PAIRS, Comparison, Estimate
from explorer.labs.optimize.job import Served
from explorer.labs.optimize.planner import Costs, Plan
from explorer.labs.optimize.strategies import STRATEGIES

SAME_ANSWERS = 1e-4  # max |output - eager's| past this: the strategy changes answers
RESAMPLES = 2000  # the totals' bootstrap over blocks of requests (seeded: the same stream, the same interval)


def blocks(indices: list[int], count: int = TARGET_PAIRS) -> list[list[int]]:
    """`indices` cut into `count` runs of consecutive ones (as equal as can be; fewer if there are fewer)."""
    count = min(count, len(indices))
    return [indices[len(indices) * k // count:len(indices) * (k + 1) // count] for k in range(count)]


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
    """Strategy `a` against `b` over the whole stream: the ratio of their totals (above 1: `b` serves it faster) with
    its bootstrap interval over blocks of the requests neither compiled at (None: fewer than MIN_PAIRS of them)."""

    a: str
    b: str
    ratio: float
    low: float | None
    high: float | None
    requests: int = 0  # the requests resampled (those neither compiled at)

    @property
    def faster(self) -> str | None:
        if self.low is None or self.high is None:
            return None
        return self.b if self.low > 1 else self.a if self.high < 1 else None

    def said(self) -> str:
        if self.low is None or self.high is None:
            return (f"{self.a} and {self.b} over the stream ({self.ratio:.2f}x): {self.requests} requests without a "
                    f"compile, too few for an interval ({MIN_PAIRS} needed)")
        if self.faster is None:
            return (f"no difference between {self.a} and {self.b} resolved over the stream ({self.ratio:.2f}x, 95% "
                    f"interval {self.low:.2f}-{self.high:.2f}x)")
        slow, fast, r = (self.a, self.b, (self.ratio, self.low, self.high)) if self.faster == self.b else \
            (self.b, self.a, (1 / self.ratio, 1 / self.high, 1 / self.low))
        return f"{fast} serves the stream {r[0]:.2f}x as fast as {slow} (95% interval {r[1]:.2f}-{r[2]:.2f}x)"


def totals(a: Served, b: Served, resamples: int = RESAMPLES, seed: int = 0) -> Totals:
    """The ratio of the two totals, compiles included. Its interval: the requests at which either compiled (one
    measurement each, the set-up with them) are kept as they were; the others, cut into blocks of consecutive
    requests, are resampled block by block, each with both strategies' seconds, so the interval carries the noise of
    the machine's spells and not a compile's absence. Below MIN_PAIRS such requests, no interval."""
    fixed = {c.at for c in (*a.compiles, *b.compiles) if c.at < len(a.seconds)}
    rest = [i for i in range(len(a.seconds)) if i not in fixed]
    if len(rest) < MIN_PAIRS:
        return Totals(a.strategy, b.strategy, a.total_s / b.total_s, None, None, len(rest))
    base_a = a.build_s + sum(a.seconds[i] for i in fixed)
    base_b = b.build_s + sum(b.seconds[i] for i in fixed)
    sums = [(sum(a.seconds[i] for i in block), sum(b.seconds[i] for i in block)) for block in blocks(rest)]
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        picks = [sums[rng.randrange(len(sums))] for _ in sums]
        ratios.append((base_a + sum(p[0] for p in picks)) / (base_b + sum(p[1] for p in picks)))
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    low, high = ratios[int(tail * (len(ratios) - 1))], ratios[int((1 - tail) * (len(ratios) - 1))]
    return Totals(a.strategy, b.strategy, a.total_s / b.total_s, low, high, len(rest))


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
        """Eager against the strategy on its warm requests (each request's two timed back to back in its process, the
        order alternating), a pair per block of consecutive requests: ms per request in the block."""
        warm = self.warm(s)
        if s.strategy == "eager" or not warm:
            return None
        cut = blocks(warm)
        return Comparison.of("eager", s.strategy, [1e3 * statistics.fmean(s.eager_s[i] for i in b) for b in cut],
                             [1e3 * statistics.fmean(s.seconds[i] for i in b) for b in cut], threads=s.threads,
                             cores=s.cores)

    def catches_up(self, s: Served) -> int | None:
        """The request count from which its total so far stays at or below eager's (eager's seconds timed beside it
        in its process); None if it had not caught up by the end of the stream."""
        ahead, caught = 0.0, None
        for i, (mine, eager) in enumerate(zip(s.seconds, s.eager_s, strict=True)):
            ahead += mine - eager
            caught = (caught if caught is not None else i + 1) if ahead <= 0 else None
        return caught

    def break_even(self, s: Served) -> Estimate | None:
        """Past the stream, the requests after which its total would reach eager's: what it is behind at the end,
        over the time a warm request saves, with the range the warm interval implies. Only where it is faster than
        eager warm by its interval."""
        steady = self.steady(s)
        if steady is None or self.catches_up(s) is not None:
            return None
        more = steady.paid_back(s.total_s - sum(s.eager_s))
        return None if more is None else Estimate(*(len(s.seconds) + x for x in (more.value, more.low, more.high)))

    def fastest(self) -> Served | None:
        """The strategy that serves the stream faster than the runner-up by the whole interval of their totals (the
        only one, if one alone served it with eager's answers); None where no interval separated the first two."""
        ranked = self.ranked()
        if len(ranked) == 1 or (len(ranked) > 1 and totals(ranked[1], ranked[0]).faster == ranked[0].strategy):
            return ranked[0]
        return None

    def tied(self) -> list[Served]:
        """The strategies no interval separated from the quickest total (itself first)."""
        ranked = self.ranked()
        return [s for s in ranked if s is ranked[0] or totals(s, ranked[0]).faster is None]

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
        best = self.fastest()
        if best is not None:
            said = [f"Fastest to serve this workload: **{best.strategy}**, {best.total_s:.2f} s for "
                    f"{len(best.seconds)} requests, compiles included"]
            if len(ranked) > 1:
                said.append(totals(ranked[1], best).said())
        else:
            tied = self.tied()
            said = [f"No single fastest: {', '.join(f'**{s.strategy}** {s.total_s:.2f} s' for s in tied)} serve this "
                    "workload within each other's noise (the totals' intervals include no difference; "
                    f"{totals(ranked[1], ranked[0]).said()}); what would separate them: a longer stream, or each "
                    "served again in fresh processes, order rotated (bench/optimize.py)"]
        flagged = [s.strategy for s in self.served if not s.skipped and not s.error and s.max_diff > SAME_ANSWERS]
        if flagged:
            said.append(f"changes answers (not ranked): {', '.join(flagged)}")
        return "; ".join(said) + "."

    def served_with(self, plan: str) -> float | None:
        """The seconds the strategy that pads to `plan` took to serve the stream (its prediction's check), if it
        served it whole."""
        return next((s.total_s for s in self.served if STRATEGIES[s.strategy].pads_to == plan and not s.skipped
                     and not s.error), None)

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
                "break_even_requests": be.calls if (be := self.break_even(s)) else None,
                "break_even_said": be.said() if be else None,
                "compile_cache": cache_said([c.cache for c in s.compiles])}

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "config": self.config, "backend": self.backend, "fresh": self.fresh,
                "workload": {"lengths": list(self.workload.lengths), "source": self.workload.source,
                             "described": self.workload.describe()},
                "costs": asdict(self.costs),
                "plans": {name: {"boundaries": list(p.boundaries), "padded_share": p.padded_share,
                                 "predicted_s": p.cost(self.costs), "served_s": self.served_with(name)}
                          for name, p in self.plans.items()},
                "strategies": [self.row(s) for s in self.served],
                "served": [asdict(s) | {"artifacts": len(s.artifacts)} for s in self.served],  # bytes: counted
                "recommendation": self.recommendation()}
