"""Two ways of running one thing, compared as this VM allows: timed in interleaved pairs (the order alternating, so
a slow spell of the machine falls on both), the ratio of their medians with a bootstrap confidence interval over
the pairs, and a word only where the interval decides it. "B is faster" is said when the whole interval is above
1; otherwise "no difference resolved at this noise". Measuring (`compare`), the value (`Comparison`) and its words
(`said`) are apart, as in torch.utils.benchmark."""

from __future__ import annotations

import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from torch.utils.benchmark.utils.common import set_torch_threads

from explorer.core.machine import THREADS, on_core
from explorer.eager.timing import Measurement, measuring_core

CONFIDENCE = 0.95
RESAMPLES = 2000  # bootstrap resamples (seeded: the same samples always give the same interval)
MIN_PAIRS = 8
TARGET_PAIRS = 20  # within the budget: enough for the interval, few enough to bootstrap in milliseconds


@dataclass(frozen=True)
class Comparison:
    """`a` against `b` in paired samples (ms per call, one block of each per pair). `ratio` is median(a) /
    median(b): above 1, `b` is faster; `low`..`high` its bootstrap interval at `confidence`."""

    a: str
    b: str
    a_ms: tuple[float, ...]
    b_ms: tuple[float, ...]
    ratio: float
    low: float
    high: float
    confidence: float = CONFIDENCE
    calls: int = 1  # calls timed per sample (a sample is their mean)
    threads: int = 0
    cores: tuple[int, ...] = ()
    node: str = ""

    @classmethod
    def of(cls, a: str, b: str, a_ms: Sequence[float], b_ms: Sequence[float], seed: int = 0,
           **where: Any) -> Comparison:
        """The comparison of paired samples (a_ms[i] and b_ms[i] timed together), its interval bootstrapped."""
        if len(a_ms) != len(b_ms) or not a_ms:
            raise ValueError("a comparison needs paired samples: as many of a as of b, at least one")
        low, high = ratio_interval(a_ms, b_ms, seed=seed)
        return cls(a, b, tuple(a_ms), tuple(b_ms), statistics.median(a_ms) / statistics.median(b_ms), low, high,
                   **where)

    @property
    def pairs(self) -> int:
        return len(self.a_ms)

    @property
    def faster(self) -> str | None:
        """The one that is faster by the whole interval, or None: not resolved at this noise."""
        return self.b if self.low > 1 else self.a if self.high < 1 else None

    @property
    def resolved(self) -> bool:
        return self.faster is not None

    @property
    def noise(self) -> float:
        """Half the interval's width, relative: the smallest difference this run could have resolved (0.12 = ±12%)."""
        return (self.high - self.low) / 2

    def interval(self, inverted: bool = False) -> str:
        """The interval of a / b, or of b / a when `inverted` (when `a` is the faster, its speed-up is said)."""
        low, high = (1 / self.high, 1 / self.low) if inverted else (self.low, self.high)
        return f"{self.confidence:.0%} interval {low:.2f}-{high:.2f}x, {self.pairs} pairs"

    def said(self) -> str:
        """'compiled is 1.32x faster than eager (95% interval 1.21-1.45x, 20 pairs)', or that no difference was
        resolved at this noise; the interval is always of the speed-up said."""
        if self.low > 1:
            return f"{self.b} is {self.ratio:.2f}x faster than {self.a} ({self.interval()})"
        if self.high < 1:
            return f"{self.a} is {1 / self.ratio:.2f}x faster than {self.b} ({self.interval(inverted=True)})"
        return (f"no difference between {self.a} and {self.b} resolved at this noise (±{self.noise:.1%}; "
                f"{self.ratio:.2f}x, {self.interval()})")

    def measurement(self, side: str) -> Measurement:
        """One side's samples as a Measurement (median, IQR, range), for the figures that show one timing."""
        return measurement_of(side, self.a_ms if side == self.a else self.b_ms, self.calls, self.threads, self.cores,
                            self.node)

    def as_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k not in ("a_ms", "b_ms")}, "pairs": self.pairs,
                "faster": self.faster, "said": self.said(), "a_ms": list(self.a_ms), "b_ms": list(self.b_ms)}


def ratio_interval(a_ms: Sequence[float], b_ms: Sequence[float], confidence: float = CONFIDENCE,
                   resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap of median(a) / median(b) over the pairs (a pair is resampled whole, so what the machine
    did to both at once stays together). Seeded: the same samples give the same interval."""
    rng = random.Random(seed)
    n = len(a_ms)
    ratios = []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(a_ms[i] for i in picks) / statistics.median(b_ms[i] for i in picks))
    ratios.sort()
    tail = (1 - confidence) / 2
    return ratios[int(tail * (resamples - 1))], ratios[int((1 - tail) * (resamples - 1))]


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


def measurement_of(label: str, ms: Sequence[float], calls: int, threads: int, cores: tuple[int, ...],
                   node: str) -> Measurement:
    """Samples (ms each) timed elsewhere as a Measurement: median, IQR, range."""
    xs = sorted(ms)
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return Measurement(label, statistics.median(xs), q[2] - q[0], xs[0], xs[-1], len(xs), calls, threads, cores=cores,
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
