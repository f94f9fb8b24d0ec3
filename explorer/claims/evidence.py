"""What a claim's experiment measured, as plain data: the numbers its verdict reads, the few the card shows, and
a chart. Measuring (the claim modules), judging (each claim's `judge`) and drawing (views/claims.py) are apart."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from explorer.claims.chosen import Chosen
from explorer.core import machine
from explorer.core.machine import Machine
from explorer.core.progress import Progress
from explorer.core.version import code_version
from explorer.eager.compare import Comparison, too_few
from explorer.sources.contract import ModelSource
from explorer.workers.protocol import Workers


class Holds(Enum):
    """What the numbers say of a claim on this machine."""

    HOLDS = "holds"
    CONDITION = "holds with a condition"
    NOT_HERE = "does not hold here"
    UNRESOLVED = "not resolved on this machine today"  # the comparison it rests on was too noisy, or not measured


HOLDS, CONDITION, NOT_HERE, UNRESOLVED = Holds.HOLDS, Holds.CONDITION, Holds.NOT_HERE, Holds.UNRESOLVED


@dataclass(frozen=True)
class Verdict:
    kind: Holds
    why: str  # the condition, or why not, in the numbers' words

    def text(self) -> str:
        said = self.kind.value
        return f"**{said[0].upper() + said[1:]}**: {self.why}"


@dataclass
class Series:
    """One line or bar series of a chart; `spread` is each point's IQR, or `low`/`high` its interval (drawn as a
    bar), when measured."""

    name: str
    x: list[Any]
    y: list[float | None]
    spread: list[float] | None = None
    axis: str = "y"  # "y2": the chart's second (right-hand) axis
    text: list[str] | None = None  # a label per point
    low: list[float | None] | None = None
    high: list[float | None] | None = None


@dataclass
class Chart:
    kind: str  # "bar" or "line"
    title: str
    x_title: str
    y_title: str
    series: list[Series]  # x is always categorical: models, settings, batch x length points
    log_y: bool = False
    y2_title: str = ""
    baseline: float | None = None  # a value drawn across the chart ("no difference": 1 for a ratio)


@dataclass
class Evidence:
    """An experiment's outcome: `numbers` are what the verdict reads (names from the domain, units in the name),
    `shown` the card's three or four (label, value, detail), `chart` its figure."""

    numbers: dict[str, float]
    shown: list[tuple[str, str, str]]
    chart: Chart
    notes: list[str] = field(default_factory=list)  # what the figures are, where it matters


def _any_model(source: ModelSource) -> str | None:
    return None


@dataclass(frozen=True)
class Claim:
    """A thing people say, the experiment that tests it here, and how its numbers decide."""

    id: str
    statement: str
    experiment: str  # one sentence: what runs
    reproduce: str  # where to see it for yourself: a Playground link query ("?model=...") or a tab's name
    measure: Callable[[Workers], Iterator[Progress | Evidence]]  # progress messages, then the evidence
    judge: Callable[[dict[str, float]], Verdict]
    # The same experiment on one model a person chose, where it runs model by model (None: it compares models of
    # the zoo it names, and runs on those only); `applies` says why it cannot run on a model, if it cannot.
    on_model: Callable[[Workers, Chosen], Iterator[Progress | Evidence]] | None = None
    applies: Callable[[ModelSource], str | None] = _any_model


@dataclass
class ClaimResult:
    claim: Claim
    evidence: Evidence
    verdict: Verdict
    measured_at: float  # time.time() when the experiment ended
    seconds: float  # how long it ran
    machine: dict[str, Any]
    model: Chosen | None = None  # re-run on a person's model, not the zoo's
    quick: bool = False  # the reduced experiment (tests, bench --quick): never this claim's evidence
    code: str = field(default_factory=code_version)  # the code that measured and judged it
    restored: bool = False  # read back from the board's file after a restart, judged again by this code

    def label(self) -> str:
        """Where and when this was measured, and how it reached the board, for every figure of the card."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.measured_at))
        on = f" on {self.model.arch or self.model.name} (the model you chose)" if self.model else ""
        quick = "Quick mode (a reduced experiment for tests, not this claim's evidence). " if self.quick else ""
        if self.restored:
            return (f"{quick}Restored from {when}: measured{on} on this server (in {duration(self.seconds)}) before "
                    f"a restart, its numbers judged again now: {Machine.of(self.machine).line()} per measurement.")
        return (f"{quick}Measured{on} on this server at {when} (in {duration(self.seconds)}): "
                f"{Machine.of(self.machine).line()} per measurement.")

    def as_dict(self) -> dict[str, Any]:
        return {"claim": self.claim.id, "statement": self.claim.statement, "experiment": self.claim.experiment,
                "reproduce": self.claim.reproduce, "verdict": self.verdict.kind.value, "why": self.verdict.why,
                "numbers": self.evidence.numbers, "shown": [list(s) for s in self.evidence.shown],
                "chart": asdict(self.evidence.chart), "notes": self.evidence.notes,
                "measured_at": self.measured_at, "seconds": self.seconds, "machine": self.machine,
                "model": asdict(self.model) if self.model else None, "quick": self.quick, "code": self.code,
                "restored": self.restored}

    @classmethod
    def of(cls, report: dict[str, Any], claim: Claim) -> ClaimResult:
        """A zoo result's `as_dict` read back (the board's file, after a restart): its numbers judged again by
        today's judge, not its stored verdict."""
        chart = report["chart"]
        numbers = {k: math.nan if v is None else v for k, v in report["numbers"].items()}  # JSON's NaN is null
        evidence = Evidence(numbers, [(a, b, c) for a, b, c in report["shown"]],
                            Chart(**{**chart, "series": [Series(**s) for s in chart["series"]]}), report["notes"])
        return cls(claim, evidence, claim.judge(numbers), report["measured_at"], report["seconds"],
                   report["machine"], quick=bool(report["quick"]), code=report["code"], restored=True)


def run_claim(claim: Claim, workers: Workers, model: Chosen | None = None) -> Iterator[Progress | ClaimResult]:
    """The experiment's progress messages (on `model`, if given: the caller checked that it applies), then its
    result with the verdict its numbers give."""
    start = time.monotonic()
    evidence: Evidence | None = None
    assert model is None or claim.on_model is not None
    for item in claim.measure(workers) if model is None else claim.on_model(workers, model):
        if isinstance(item, Evidence):
            evidence = item
        else:
            yield item
    assert evidence is not None, f"claim {claim.id} measured nothing"
    yield ClaimResult(claim, evidence, claim.judge(evidence.numbers), time.time(), time.monotonic() - start,
                      machine.describe(), model, quick=workers.quick)


def pair_numbers(key: str, c: Comparison) -> dict[str, float]:
    """A paired comparison as the numbers a verdict reads: `key` the ratio (a over b), its interval and pairs. Below
    MIN_PAIRS the interval's ends are NaN: every comparison with them is false, so no judge reads a verdict there."""
    low, high = (c.low, c.high) if c.low is not None and c.high is not None else (math.nan, math.nan)
    return {key: c.ratio, f"{key}_low": low, f"{key}_high": high, f"{key}_pairs": float(c.pairs)}


def interval(x: dict[str, float], key: str, inverted: bool = False) -> str:
    """The ratio under `key` with its interval, as `pair_numbers` stored it: '2.50x, 95% interval 2.2-2.8x over 20
    pairs'; `inverted`, the other way round (b over a), so that a speed-up is said above 1."""
    ratio, low, high = x[key], x[f"{key}_low"], x[f"{key}_high"]
    if math.isnan(low) or math.isnan(high):
        return f"{times(1 / ratio if inverted else ratio)}, {too_few(int(x[f'{key}_pairs']))}"
    if inverted:
        ratio, low, high = 1 / ratio, 1 / high, 1 / low
    return f"{times(ratio)}, 95% interval {low:.2f}-{high:.2f}x over {x[f'{key}_pairs']:.0f} pairs"


def times(ratio: float) -> str:
    """A ratio as people say it: 3.2x, 0.84x."""
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.0f}x"


def duration(s: float) -> str:
    """Seconds as people read them: '4.2 ms', '0.34 s', '12 s'."""
    return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s:.2f} s" if s < 10 else f"{s:.0f} s"
