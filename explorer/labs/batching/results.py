"""What the batching lab measured: per strategy, eager and compiled, and the lab run a session keeps."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from explorer.core import limits, machine
from explorer.eager.compare import Comparison, Rounds
from explorer.eager.timing import Measurement
from models import arch_label
from models.config import config_dict

AGREE_TOL = 1e-4


@dataclass
class CompiledStrategy:
    """One strategy under torch.compile (measured in the compile worker; see lab/compiled.py)."""

    backend: str
    forward: Measurement | None = None
    train_step: Measurement | None = None
    eager_forward: Measurement | None = None  # the same strategy eagerly, timed back to back in the worker
    comparison: Comparison | None = None  # eager (a) and compiled (b) forwards in interleaved pairs
    compile_s: float | None = None  # first forward over the whole batch: every shape it compiles
    train_compile_s: float | None = None  # the same for the train step (grad mode compiles anew)
    compiles: int = 0  # graphs the backend compiled, forward and train step
    graph_breaks: list[str] = field(default_factory=list)  # reasons: the code between runs eagerly
    max_abs_diff: float | None = None  # compiled vs eager logits of the same strategy
    fallback: str | None = None  # why the figure is not a compiled one, or None
    error: str | None = None
    note: str | None = None  # e.g. why the train step has no figure

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend, "compile_s": self.compile_s, "train_compile_s": self.train_compile_s,
            "compiles": self.compiles, "graph_breaks": self.graph_breaks, "max_abs_diff": self.max_abs_diff,
            "fallback": self.fallback,
            "error": self.error, "note": self.note,
            "forward": self.forward.as_dict() if self.forward else None,
            "train_step": self.train_step.as_dict() if self.train_step else None,
            "eager_forward": self.eager_forward.as_dict() if self.eager_forward else None,
            "comparison": self.comparison.as_dict() if self.comparison else None,
        }

    @property
    def ran(self) -> Comparison | None:
        """Eager against compiled forward, paired in the worker; None unless compiled code ran."""
        return None if self.fallback or self.error else self.comparison

    @property
    def speedup(self) -> float | None:
        """Eager over compiled forward, the median pair's; None unless compiled code ran."""
        return self.ran.ratio if self.ran else None


def _ms(m: Measurement | None) -> dict[str, float | None]:
    return {"median_ms": m.median_ms if m else None, "iqr_ms": m.iqr_ms if m else None}


@dataclass
class StrategyResult:
    name: str
    title: str
    supported: bool
    note: str = ""
    forward: Measurement | None = None
    train_step: Measurement | None = None
    tokens_per_s: float | None = None
    padding_fraction: float | None = None
    flops_total: int | None = None
    flops_useful: int | None = None
    peak_bytes: int | None = None
    max_abs_diff: float | None = None
    distinct_shapes: int | None = None
    compiled: CompiledStrategy | None = None

    @property
    def agrees(self) -> bool | None:
        return None if self.max_abs_diff is None else self.max_abs_diff <= AGREE_TOL

    @property
    def compiled_forward(self) -> Measurement | None:
        """The compiled forward figure, only when it is an honest compiled one."""
        c = self.compiled
        return c.forward if c and not c.fallback and not c.error else None

    def as_dict(self) -> dict[str, Any]:
        c = self.compiled
        compiled = None if c is None else {
            **c.as_dict(), "forward_ms": _ms(c.forward)["median_ms"], "forward_iqr_ms": _ms(c.forward)["iqr_ms"],
            "train_step_ms": _ms(c.train_step)["median_ms"], "train_step_iqr_ms": _ms(c.train_step)["iqr_ms"],
            "speedup": c.speedup,
        }
        return {
            "name": self.name, "title": self.title, "supported": self.supported, "note": self.note,
            "forward_ms": _ms(self.forward)["median_ms"], "forward_iqr_ms": _ms(self.forward)["iqr_ms"],
            "train_step_ms": _ms(self.train_step)["median_ms"], "train_step_iqr_ms": _ms(self.train_step)["iqr_ms"],
            "runs": self.forward.runs if self.forward else None,
            "threads": self.forward.threads if self.forward else None,
            "tokens_per_s": self.tokens_per_s, "padding_fraction": self.padding_fraction,
            "flops_total": self.flops_total, "flops_useful": self.flops_useful, "peak_bytes": self.peak_bytes,
            "max_abs_diff": self.max_abs_diff, "agrees": self.agrees, "distinct_shapes": self.distinct_shapes,
            "compiled": compiled,
        }


@dataclass
class LabResult:
    lengths: list[int]
    strategies: list[StrategyResult] = field(default_factory=list)
    forwards: Rounds | None = None  # every supported strategy's eager forward, timed round-robin

    def strategy(self, name: str) -> StrategyResult:
        return next(s for s in self.strategies if s.name == name)

    def comparison(self, a: str, b: str) -> Comparison:
        """Strategy `a`'s eager forward against `b`'s, paired round by round, under their titles."""
        assert self.forwards is not None
        return replace(self.forwards.comparison(a, b), a=self.strategy(a).title, b=self.strategy(b).title)

    def ranked(self) -> list[StrategyResult]:
        """The strategies that ran and agree with the loop, fastest median forward first."""
        return sorted((s for s in self.strategies if s.agrees and s.forward), key=lambda s: s.forward.median_ms)

    def verdict(self) -> str:
        """The fastest eager forward among strategies that agree with the loop, said only as far as its paired
        comparison with the runner-up resolves; then what compiling did to each, against its own eager timed in
        interleaved pairs in the worker: a compiled figure is never ranked against eager ones timed elsewhere."""
        ranked = self.ranked()
        if not ranked:
            return "No strategy both ran and agreed with the per-sample loop."
        best = ranked[0]
        ms = f"{best.forward.median_ms:.2f} ms"
        if len(ranked) == 1:  # the loop is the reference: it always agrees with itself
            parts = [f"Fastest correct forward: **the per-sample loop** itself, {ms}: no other strategy computes what "
                     "it computes"]
        else:
            runner_up = self.comparison(ranked[1].name, best.name)
            if runner_up.resolved:
                parts = [f"Fastest correct forward: **{best.title}**, {ms}: {runner_up.said()}"]
            else:
                parts = [f"Fastest correct forward: **{best.title}** or **{ranked[1].title}** ({best.title} "
                         f"{ms}): {runner_up.said()}"]
            if best.name != "loop" and ranked[1].name != "loop":  # the runner-up's clause already said it
                parts.append(f"against the per-sample loop: {self.comparison('loop', best.name).said()}")
            if best.name != "loop":
                parts.append(f"it computes {best.padding_fraction:.0%} padding")
        pad_ = self.strategy("pad")
        if pad_ in ranked[1:]:
            parts.append(f"padding to the longest computes {pad_.padding_fraction:.0%} pad positions: "
                         f"{self.comparison(pad_.name, best.name).said()}")
        compiled = [(s.title, s.compiled.ran) for s in ranked if s.compiled and s.compiled.ran]
        if compiled:
            parts.append("compiled, each against its own eager forward in interleaved pairs in the worker: "
                         + ", ".join(f"{title}: {pair.said()}" for title, pair in compiled))
        wrong = [s.title for s in self.strategies if s.agrees is False]
        if wrong:
            parts.append("**disagrees with the loop: " + ", ".join(wrong) + "**")
        return "; ".join(parts) + "."

    def as_dict(self) -> dict[str, Any]:
        return {"sentences": len(self.lengths), "tokens": sum(self.lengths), "lengths": self.lengths,
                "verdict": self.verdict(), "strategies": [s.as_dict() for s in self.strategies],
                "forwards_interleaved": None if self.forwards is None else {
                    "rounds": len(next(iter(self.forwards.ms.values()))), "calls_per_round": self.forwards.calls,
                    "ms": {k: list(v) for k, v in self.forwards.ms.items()}}}


@dataclass
class LabRun:
    """A session's latest lab run: what went in, and what came out (compiled figures fill in later)."""

    texts: list[str]
    bucket_width: int
    result: LabResult
    model: str
    config: Any

    def report(self) -> dict[str, Any]:
        return {"model": self.model, "config": config_dict(self.config), "arch": arch_label(self.model, self.config),
                "bucket_width": self.bucket_width, "machine": machine.describe(), "limits": limits.describe(),
                **self.result.as_dict()}
