"""What a distributed run leaves: per rank, a timeline of segments, measured values and the error it met (or the
signal that killed it); per scenario, the runs, a table of costs and a verdict read off them."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

# Segment kinds, in the order the timeline's legend lists them.
FORWARD, BACKWARD, WAIT, ALLREDUCE, OPTIMIZER, COMPILE, STALLED = (
    "forward", "backward", "waiting for other ranks", "all-reduce", "optimizer", "compile", "stalled in a collective")
KINDS = (FORWARD, BACKWARD, COMPILE, WAIT, ALLREDUCE, OPTIMIZER, STALLED)


@dataclass(frozen=True)
class Segment:
    step: int
    kind: str
    start_s: float  # time.perf_counter() in the rank: CLOCK_MONOTONIC, the same clock in every process on Linux
    end_s: float

    @property
    def ms(self) -> float:
        return (self.end_s - self.start_s) * 1e3


@dataclass
class RankReport:
    """What a rank says about itself (sent back as a file: a rank may die before it can say anything)."""

    rank: int
    segments: list[Segment] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the exception's one line, as the rank's program would have printed it
    error_step: int | None = None
    error_after_s: float | None = None  # from the rank's start of work to the exception


@dataclass(frozen=True)
class RankOutcome:
    """A rank as the launcher saw it: its report (None when it never wrote one), how its process ended, and the
    end of what it printed to stderr (where gloo's C++ errors go before an abort)."""

    rank: int
    report: RankReport | None
    exitcode: int | None  # None: still running at the wall-clock limit (then killed)
    signal: str | None  # "SIGABRT" when the process died of a signal
    stderr_tail: str

    @property
    def state(self) -> str:
        if self.exitcode is None:
            return "killed at the wall-clock limit"
        if self.signal:
            return f"killed by {self.signal} (no Python exception)"
        if self.report is None:
            return f"exited with code {self.exitcode} without a report"
        return "error" if self.report.error else "finished"


@dataclass(frozen=True)
class WorldRun:
    """One start of `world_size` processes: what was tried, and how each rank ended."""

    label: str
    world_size: int
    ranks: list[RankOutcome]
    wall_s: float

    @property
    def ok(self) -> bool:
        return all(r.state == "finished" for r in self.ranks)

    def value(self, key: str, rank: int = 0) -> Any:
        report = self.ranks[rank].report
        return None if report is None else report.values.get(key)

    def step_ms(self, kinds: tuple[str, ...] | None = None) -> list[float]:
        """Per step, the slowest rank's time from its first to its last segment (of `kinds`): the step time
        everyone pays, since the all-reduce waits for the last rank."""
        per_step: dict[int, float] = {}
        for r in self.ranks:
            if r.report is None:
                continue
            by_step: dict[int, list[Segment]] = {}
            for s in r.report.segments:
                if kinds is None or s.kind in kinds:
                    by_step.setdefault(s.step, []).append(s)
            for step, segs in by_step.items():
                ms = (max(s.end_s for s in segs) - min(s.start_s for s in segs)) * 1e3
                per_step[step] = max(per_step.get(step, 0.0), ms)
        return [per_step[k] for k in sorted(per_step)]

    def kind_ms(self, kind: str) -> list[float]:
        """Every segment of `kind`, any rank, in ms."""
        return [s.ms for r in self.ranks if r.report for s in r.report.segments if s.kind == kind]


@dataclass(frozen=True)
class Cost:
    """One row of the costs table: a measured figure with its spread and what it was measured on."""

    what: str
    median_ms: float
    q1_ms: float
    q3_ms: float
    samples: int
    note: str = ""

    @classmethod
    def of(cls, what: str, samples_ms: list[float], note: str = "") -> Cost | None:
        if not samples_ms:
            return None
        if len(samples_ms) == 1:
            return cls(what, samples_ms[0], samples_ms[0], samples_ms[0], 1, note)
        q1, median, q3 = statistics.quantiles(samples_ms, n=4, method="inclusive")
        return cls(what, median, q1, q3, len(samples_ms), note)


@dataclass
class DdpResult:
    scenario: str
    model: str
    config: dict[str, Any]
    world_size: int
    runs: list[WorldRun]
    costs: list[Cost]
    verdict: str
    timeline_run: int = 0  # which run the timeline figure shows

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"states": [[r.state for r in run.ranks] for run in self.runs]}
