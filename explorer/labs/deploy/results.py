"""What one route did, and what the lab concludes: value objects the views, the CLI and the API read."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from explorer.core.fmt import format_bytes
from explorer.eager.compare import Comparison
from explorer.eager.timing import Measurement

TOLERANCE = 1e-4  # max |artefact - eager| for a run to count as correct (float32 reassociation stays far below)

WORKS, LOUD, SILENT = "works", "fails loudly", "silently wrong"
# export's and dynamo's words for a decision taken on a tensor's value
DATA_DEPENDENT = re.compile(r"data-dependent|DataDependent|GuardOnDataDependentSymNode|generic_jump", re.IGNORECASE)


@dataclass(frozen=True)
class Check:
    """The artefact against eager on one input."""

    label: str  # "length 32", "length 42, another text (exits after 2 blocks, not 4)"
    tokens: int
    max_abs_diff: float | None  # None if the artefact raised
    error: str = ""

    @property
    def correct(self) -> bool:
        return self.max_abs_diff is not None and self.max_abs_diff <= TOLERANCE


@dataclass(frozen=True)
class Warned:
    category: str
    message: str
    where: str  # "models/early_exit.py:71: <source>" when the warning names this project's code, else ""


@dataclass
class RouteResult:
    route: str  # "jit.trace", "jit.script", "export", "export (Dim.AUTO)", "onnx", "aoti"
    seconds: float = 0.0  # to build the artefact (trace, export, package)
    error: str = ""  # "Type: first line" when the route itself failed
    where: str = ""  # the user's line the error names
    warnings: list[Warned] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    artefact: str = ""  # the file copied out for download ("" if none, or past the size limit)
    artefact_bytes: int | None = None
    latency: Measurement | None = None  # the artefact at the current input
    eager: Measurement | None = None  # eager at the current input, timed in interleaved pairs with it
    comparison: Comparison | None = None  # eager (a) against the artefact (b), the pairs both figures come from
    notes: list[str] = field(default_factory=list)  # range constraints, the deprecation, a skipped reason
    graph_code: str = ""  # the exported program's graph as code
    graph_ops: dict[str, int] = field(default_factory=dict)  # aten op -> count in that graph
    fx: tuple = ()  # its FxNodes, for the graph renderer
    skipped: str = ""  # why the route did not run here (no C++ compiler, no export to package)
    load_snippet: str = ""  # one line that loads and runs the artefact
    report: str = ""  # a text file beside the artefact (the draft export's report), copied out with it

    @property
    def outcome(self) -> str:
        if self.skipped:
            return "skipped"
        if self.error:
            return LOUD
        if any(c.max_abs_diff is not None and not c.correct for c in self.checks):
            return SILENT  # ran without an error somewhere and answered wrong: the case to fear
        return LOUD if any(c.error for c in self.checks) else WORKS

    @property
    def speedup(self) -> float | None:
        return self.comparison.ratio if self.comparison else None

    def first_problem(self) -> str:
        """The error, or the first failing check, in one line."""
        if self.skipped:
            return self.skipped
        if self.error:
            return self.error + (f" (at {self.where})" if self.where else "")
        wrong = [c for c in self.checks if c.max_abs_diff is not None and not c.correct]  # the silent ones first
        bad = next(iter(wrong or [c for c in self.checks if not c.correct]), None)
        if bad is None:
            return ""
        if bad.error:
            return f"at {bad.label}: {bad.error}"
        return f"at {bad.label}: no error, but max |diff| {bad.max_abs_diff:.3g} vs eager"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("fx")
        d["outcome"] = self.outcome
        d["speedup"] = self.speedup
        d["latency"] = self.latency.as_dict() if self.latency else None
        d["eager"] = self.eager.as_dict() if self.eager else None
        d["comparison"] = self.comparison.as_dict() if self.comparison else None
        return d


@dataclass
class DeployResult:
    model: str
    config: dict[str, Any]
    text: str
    tokens: int
    routes: list[RouteResult]
    pending: list[str] = field(default_factory=list)  # routes still to run: this is the result so far

    def verdict(self) -> str:
        """The route to take for this model, and why, from the numbers (so far, while routes are still to run)."""
        if self.pending:
            return (f"So far, {len(self.routes)} of {len(self.routes) + len(self.pending)} routes (still to run: "
                    f"{', '.join(self.pending)}): " + self._verdict())
        return self._verdict()

    def _verdict(self) -> str:
        good = [r for r in self.routes if r.outcome == WORKS]
        silent = [r.route for r in self.routes if r.outcome == SILENT]
        warn = f" Avoid {', '.join(silent)}: it runs without an error and returns wrong answers." if silent else ""
        if not good:
            return "No route freezes this model as written: every one fails or is silently wrong on some input. " + \
                self._rewrite() + warn
        timed = [r for r in good if r.comparison is not None]
        best = max(timed, key=lambda r: r.speedup or 0.0) if timed else good[0]
        lengths = sorted({c.tokens for c in best.checks})
        why = (f"correct at every tested input ({', '.join(map(str, lengths))} tokens; max |diff| "
               f"{max(c.max_abs_diff or 0.0 for c in best.checks):.1g})")
        if best.comparison is not None:
            why += f"; at {self.tokens} tokens, {best.comparison.said()}"
            if len(timed) > 1:
                why += (f"; of the {len(timed)} correct routes, the highest median speed against eager (each route "
                        "timed against eager on its own, not against the others)")
        size = f", {format_bytes(best.artefact_bytes)}" if best.artefact_bytes else ""
        caveat = " TorchScript is deprecated in this torch: prefer a working export route." \
            if best.route.startswith("jit.") else ""
        return f"Deploy with {best.route}: {why}{size}.{caveat}{warn}"

    def _rewrite(self) -> str:
        """What to change so that a static graph can hold the model's decisions: read from why the routes failed
        (a decision on a tensor's value, at its line), then from the model's own options."""
        if self.config.get("exit_with") == "python":
            return "Set exit_with=cond: each exit decision becomes a torch.cond, which export keeps in the graph."
        if self.model == "tree":
            return ("The tree's shape is decided by the bytes of the text, which no fixed graph can hold: serve it "
                    "eagerly (or compile it, which recompiles per shape).")
        decided = next((r for r in self.routes if r.error and DATA_DEPENDENT.search(r.error)), None)
        if decided is not None:
            at = f" at {decided.where}" if decided.where else ""
            return (f"The forward decides on a tensor's value{at}, which no fixed graph can hold ({decided.route}: "
                    f"{decided.error[:120]}): write that decision as torch.cond (both branches kept in the graph), "
                    "or take it out of the forward.")
        if self.config.get("loop") == "python":
            return "Set loop=scan: the time loop becomes one scan op, which exports with a dynamic length."
        return "Rewrite the data-dependent part with torch.cond or scan."

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "config": self.config, "text": self.text, "tokens": self.tokens,
                "verdict": self.verdict(), "routes": [r.as_dict() for r in self.routes], "pending": self.pending}
