"""Two ways of running one thing, compared as this VM allows: timed in interleaved pairs (the order alternating, so
a slow spell of the machine falls on both), the median of the per-pair ratios with its distribution-free confidence
interval (order statistics of the ratios, sized by the binomial law of their signs: it covers at its level for any
noise that treats the two sides alike, at any number of pairs), and a word only where the interval decides it. "B is
faster" is said when the whole interval is above 1; otherwise "no difference resolved at this noise"; below
MIN_PAIRS, "too few samples to compare". Measuring (`compare`), the value (`Comparison`) and its words (`said`) are
apart, as in torch.utils.benchmark."""

from __future__ import annotations

import math
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from torch.utils.benchmark.utils.common import set_torch_threads

from explorer.core.machine import THREADS, on_core
from explorer.eager.timing import Measurement, measuring_core

CONFIDENCE = 0.95
# Below this many independent pairs no comparison is judged, whoever asks: the interval's ends would be the extreme
# pairs themselves (with 6 or 7 it can only just exclude 1 at 95%), so one slow spell would decide the word.
MIN_PAIRS = 8
TARGET_PAIRS = 20  # within the budget: enough pairs for a narrow interval


@dataclass(frozen=True)
class Comparison:
    """`a` against `b` in paired samples (ms per call, one block of each per pair; each pair an independent unit).
    `ratio` is the median over the pairs of a / b: above 1, `b` is faster; `low`..`high` its interval at
    `confidence` (None below MIN_PAIRS: no interval, no verdict)."""

    a: str
    b: str
    a_ms: tuple[float, ...]
    b_ms: tuple[float, ...]
    ratio: float
    low: float | None
    high: float | None
    confidence: float = CONFIDENCE
    calls: int = 1  # calls timed per sample (a sample is their mean)
    threads: int = 0
    cores: tuple[int, ...] = ()
    node: str = ""

    @classmethod
    def of(cls, a: str, b: str, a_ms: Sequence[float], b_ms: Sequence[float], **where: Any) -> Comparison:
        """The comparison of paired samples (a_ms[i] and b_ms[i] timed together, the pairs independent of each
        other); below MIN_PAIRS it carries the samples and no interval."""
        if len(a_ms) != len(b_ms) or not a_ms:
            raise ValueError("a comparison needs paired samples: as many of a as of b, at least one")
        if min(*a_ms, *b_ms) <= 0:
            raise ValueError("a comparison needs positive timings")
        ratios = sorted(x / y for x, y in zip(a_ms, b_ms, strict=True))
        low, high = ratio_interval(ratios) if len(ratios) >= MIN_PAIRS else (None, None)
        return cls(a, b, tuple(a_ms), tuple(b_ms), statistics.median(ratios), low, high, **where)

    @property
    def pairs(self) -> int:
        return len(self.a_ms)

    @property
    def enough(self) -> bool:
        """Enough independent pairs for an interval and a verdict (MIN_PAIRS)."""
        return self.low is not None and self.high is not None

    @property
    def faster(self) -> str | None:
        """The one that is faster by the whole interval, or None: not resolved at this noise, or too few pairs."""
        if self.low is None or self.high is None:
            return None
        return self.b if self.low > 1 else self.a if self.high < 1 else None

    @property
    def resolved(self) -> bool:
        return self.faster is not None

    @property
    def noise(self) -> float | None:
        """Half the interval's width, relative: the smallest difference this run could have resolved (0.12 = ±12%);
        None without an interval."""
        return None if self.low is None or self.high is None else (self.high - self.low) / 2

    def interval(self, inverted: bool = False) -> str:
        """The interval of a / b, or of b / a when `inverted` (when `a` is the faster, its speed-up is said)."""
        if self.low is None or self.high is None:
            return too_few(self.pairs)
        low, high = (1 / self.high, 1 / self.low) if inverted else (self.low, self.high)
        return f"{self.confidence:.0%} interval {low:.2f}-{high:.2f}x, {self.pairs} pairs"

    def said(self) -> str:
        """'compiled is 1.32x faster than eager (95% interval 1.21-1.45x, 20 pairs)', or that no difference was
        resolved at this noise, or that there were too few pairs to compare; the interval is always of the speed-up
        said."""
        if self.low is None or self.high is None:
            return f"{self.a} and {self.b}: {too_few(self.pairs)}"
        if self.low > 1:
            return f"{self.b} is {self.ratio:.2f}x faster than {self.a} ({self.interval()})"
        if self.high < 1:
            return f"{self.a} is {1 / self.ratio:.2f}x faster than {self.b} ({self.interval(inverted=True)})"
        return (f"no difference between {self.a} and {self.b} resolved at this noise (±{self.noise:.1%}; "
                f"{self.ratio:.2f}x, {self.interval()})")

    def paid_back(self, paid_s: float) -> Estimate | None:
        """After how many calls `paid_s` seconds paid up front for `b` (its compile) are repaid by what `b` saves per
        call, with the range the interval implies (b's median times the ratio's bounds, less one); None unless `b`
        is faster by the whole interval."""
        if self.faster != self.b or self.low is None or self.high is None:
            return None
        per_call_s = statistics.median(self.b_ms) / 1e3
        return Estimate(paid_s / (per_call_s * (self.ratio - 1)), paid_s / (per_call_s * (self.high - 1)),
                        paid_s / (per_call_s * (self.low - 1)))

    def measurement(self, side: str) -> Measurement:
        """One side's samples as a Measurement (median, IQR, range), for the figures that show one timing."""
        return measurement_of(side, self.a_ms if side == self.a else self.b_ms, self.calls, self.threads, self.cores,
                            self.node)

    def as_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k not in ("a_ms", "b_ms")}, "pairs": self.pairs,
                "faster": self.faster, "said": self.said(), "a_ms": list(self.a_ms), "b_ms": list(self.b_ms)}


@dataclass(frozen=True)
class Estimate:
    """A figure derived from an interval (a break-even, a count of requests): its point and the range the
    interval's bounds imply, said rounded to what that range can resolve."""

    value: float
    low: float
    high: float

    @property
    def calls(self) -> int:
        return math.ceil(self.value)

    def said(self) -> str:
        """'about 3,000 (2,400-4,100)': two significant figures, as many as an interval this wide can tell."""
        return f"about {rounded(self.value)} ({rounded(self.low)}-{rounded(self.high)})"


def rounded(x: float, figures: int = 2) -> str:
    """A whole count to `figures` significant figures, with thousands separators: 1,133,293 -> '1,100,000'."""
    if x < 10**figures:
        return f"{math.ceil(x):,}"
    return f"{round(x, figures - 1 - math.floor(math.log10(x))):,.0f}"


def too_few(n: int) -> str:
    """What a comparison of n pairs says instead of an interval."""
    return "one sample: no interval" if n == 1 else f"too few samples to compare ({n}; {MIN_PAIRS} needed)"


def ratio_interval(ratios: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The interval of the median per-pair ratio: the k-th smallest and k-th largest of the sorted ratios, k the
    largest rank with P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2. Without a difference each pair's ratio is as
    likely above 1 as below, so the interval misses 1 at most 1 - confidence of the time, whatever the noise's shape
    (the sign test's interval; exact, no resampling). Needs n >= 6 at 95%."""
    ratios, tail = sorted(ratios), (1 - confidence) / 2
    n = len(ratios)
    k, below = 0, 0.0
    while below + math.comb(n, k) / 2**n <= tail:  # below = P(Binomial(n, 1/2) < k + 1) once k is counted
        below += math.comb(n, k) / 2**n
        k += 1
    if k == 0:
        raise ValueError(f"{n} pairs are too few for a {confidence:.0%} interval")
    return ratios[k - 1], ratios[n - k]


@dataclass(frozen=True)
class Rounds:
    """Several ways of running one thing, timed round-robin: each round times one block of each, the order rotated
    round by round, so any two of them form paired samples (`comparison`). `ms[name]` is ms per call, per round."""

    ms: dict[str, tuple[float, ...]]
    calls: int = 1  # calls timed per block (a sample is their mean)
    threads: int = 0
    cores: tuple[int, ...] = ()
    node: str = ""

    def comparison(self, a: str, b: str) -> Comparison:
        return Comparison.of(a, b, self.ms[a], self.ms[b], calls=self.calls, threads=self.threads, cores=self.cores,
                             node=self.node)

    def measurement(self, name: str) -> Measurement:
        return measurement_of(name, self.ms[name], self.calls, self.threads, self.cores, self.node)


def iqr(xs: Sequence[float]) -> float:
    """The samples' interquartile range (0 for a single sample)."""
    if len(xs) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(xs, n=4)
    return q3 - q1


def measurement_of(label: str, ms: Sequence[float], calls: int, threads: int, cores: tuple[int, ...],
                   node: str) -> Measurement:
    """Samples (ms each) timed elsewhere as a Measurement: median, IQR, range."""
    xs = sorted(ms)
    return Measurement(label, statistics.median(xs), iqr(xs), xs[0], xs[-1], len(xs), calls, threads, cores=cores,
                       node=node)


def interleaved(fns: dict[str, Callable[[], object]], min_run_time: float, min_rounds: int = MIN_PAIRS) -> Rounds:
    """Time every fn in `fns` round-robin for about `min_run_time` seconds in all (after a warm-up call of each),
    the order rotated round by round, on one measuring core with the pinned threads; the same number of calls per
    block on every side, sized so that the budget gives about TARGET_PAIRS rounds."""
    named = list(fns.items())
    with measuring_core() as core, on_core(core) as cores, set_torch_threads(THREADS):
        once = 0.0
        for _, fn in named:
            start = time.perf_counter()
            fn()
            once += time.perf_counter() - start
        number = max(1, int(min_run_time / (TARGET_PAIRS * max(once, 1e-7))))
        ms: dict[str, list[float]] = {name: [] for name, _ in named}
        began, rounds = time.perf_counter(), 0
        while time.perf_counter() - began < min_run_time or rounds < min_rounds:
            shift = rounds % len(named)
            for name, fn in named[shift:] + named[:shift]:
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                ms[name].append(1e3 * (time.perf_counter() - start) / number)
            rounds += 1
    return Rounds({k: tuple(v) for k, v in ms.items()}, number, THREADS, cores, platform.node())


def compare(a: str, a_fn: Callable[[], object], b: str, b_fn: Callable[[], object], min_run_time: float,
            min_pairs: int = MIN_PAIRS) -> Comparison:
    """`a_fn` against `b_fn` in interleaved pairs (see `interleaved`)."""
    return interleaved({a: a_fn, b: b_fn}, min_run_time, min_pairs).comparison(a, b)
