"""What a distributed run leaves: per rank, a timeline of segments, measured values and the error it met (or the
signal that killed it); per scenario, the runs, a table of costs and a verdict read off them."""

from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

# Segment kinds, in the order the timeline's legend lists them.
FORWARD, BACKWARD, WAIT, ALLREDUCE, OPTIMIZER, COMPILE, STALLED = (
    "forward", "backward", "waiting for other ranks", "all-reduce", "optimizer", "compile", "stalled in a collective")
KINDS = (FORWARD, BACKWARD, COMPILE, WAIT, ALLREDUCE, OPTIMIZER, STALLED)


def tidy(message: str) -> str:
    """An error as a person reads it: without the build machine's source paths torch's C++ errors carry."""
    message = message.replace("Got the following error when running the callback: RuntimeError: ", "")
    return re.sub(r"/__w/pytorch/pytorch/(third_party/)?", "", message)


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
    error_at_s: float | None = None  # perf_counter at the exception
    error_into_step_s: float | None = None  # from the start of the step it came in


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
        if self.signal:
            return f"killed by {self.signal} (no Python exception)"
        if self.report is not None:  # it said how its work ended (it may have been killed later, waiting for peers)
            return "error" if self.report.error else "finished"
        if self.exitcode is None:
            return "killed at the wall-clock limit"
        return f"exited with code {self.exitcode} without a report"


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

    def slowest(self, key: str, skip: int = 0) -> list[float]:
        """Per step, the largest of the ranks' values under `key` (a list per rank), the first `skip` left out:
        the step time everyone pays, since the all-reduce waits for the last rank."""
        per_rank = [r.report.values.get(key, [])[skip:] for r in self.ranks if r.report]
        return [max(s) for s in zip(*per_rank, strict=False)]

    def ending(self) -> str:
        """How each rank ended, a clause per rank: its steps, its error (step, seconds, first line), or the signal
        that killed it with the line gloo printed before abort()."""
        parts = []
        for r in self.ranks:
            rep = r.report
            if r.state == "finished":
                caught = [(k.removesuffix(": error"), v, rep.values.get(k + " step")) for k, v in rep.values.items()
                          if k.endswith(": error") and v]
                said = "; ".join(f"{what} raised at the run's step {step}: \"{first_line(e)}\""
                                 for what, e, step in caught)
                parts.append(f"rank {r.rank} ran to its end, {rep.values['steps done']} steps in all"
                             + (f", its configurations' errors caught: {said}" if said else ""))
            elif rep is not None and rep.error:
                parts.append(f"rank {r.rank} raised {rep.error_into_step_s:.1f} s into step {rep.error_step}: "
                             f"\"{first_line(rep.error)}\"")
            else:
                lines = r.stderr_tail.splitlines()
                cause = next((ln for ln in lines if "mismatch" in ln), "") or next(
                    (ln for ln in lines if "what()" in ln), "")
                parts.append(f"rank {r.rank} {r.state}" + (f"; its last words: \"{tidy(cause.strip())}\""
                                                           if cause else ""))
        return "; ".join(parts)

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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"states": [[r.state for r in run.ranks] for run in self.runs]}


def first_line(message: str) -> str:
    """A message's first line, whole: a verdict never cuts a message mid-word."""
    return (message.strip().splitlines() or [""])[0]
