"""The debugging lab, end to end: the bugged model in each mode, where the NaN came from, the comparison that
exposes a silent bug, and the hook eager mode allows; a verdict computed from those numbers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from explorer.core.errors import InputError
from explorer.core.inputs import tokenize
from explorer.core.progress import Progress
from explorer.eager.partial import PartialGraph, record_partial
from explorer.labs.debug.compare import Comparison, GraphChange, compare, comparison_texts, graph_change
from explorer.labs.debug.failure import Failure
from explorer.labs.debug.inspect import InspectJob, Recording, compared, record
from explorer.labs.debug.modes import MODES, DebugJob, ModeOutcome, bugged, eager, traced
from explorer.labs.debug.nan import Finding, locate
from explorer.workers.protocol import JobRunner, WorkerFailure
from models.bugs import BUGS
from models.config import config_dict

COMPARE_LENGTHS = (8, 32, 128)


@dataclass
class DebugResult:
    model: str
    config: dict[str, Any]
    bug: str
    text: str
    tokens: int
    modes: list[ModeOutcome]
    findings: list[Finding] = field(default_factory=list)  # NaN bugs only
    comparisons: list[Comparison] = field(default_factory=list)
    graph: GraphChange | None = None
    inspection: list[Recording] = field(default_factory=list)
    partial: PartialGraph | None = None  # the graph eager mode built before the forward raised, if it raised there

    def verdict(self) -> str:
        b = BUGS[self.bug]
        failed = [m for m in self.modes if m.failed and m.failure]
        parts = []
        first = next((m for m in self.modes if m.mode == "eager"), None)
        if first and first.failed and first.failure:
            f = first.failure
            parts.append(f"eager names {f.where or 'no line of yours'} in {f.lines} lines after {first.seconds:.2f} s")
        elif first:
            parts.append(f"eager raises nothing (loss {first.loss:.3g}, gradients "
                         f"{'finite' if first.grad_finite else 'NOT finite'})")
        for m in failed:
            if m.mode != "eager" and m.failure and m.seconds is None:
                parts.append(f"{m.mode} was not measured: {m.failure.message}")
            elif m.mode != "eager" and m.failure:
                same = "the same line" if first and first.failure and m.failure.where == first.failure.where \
                    else (m.failure.where or "no line of yours")
                parts.append(f"{m.mode} names {same} in {m.failure.lines} lines after {m.seconds:.2f} s "
                             f"({m.failure.exception}: {m.failure.message})")
        if first is None or first.failed:
            parts += [f"{m.mode} raises nothing" for m in self.modes if not m.failed]
        wrong = [c for c in self.comparisons if c.max_abs_diff is not None and c.max_abs_diff > 1e-6]
        if not (first and first.failed) and wrong:
            parts.append(f"only a comparison shows it: {len(wrong)} of {len(self.comparisons)} inputs differ from "
                         f"the un-bugged model (up to {max(c.max_abs_diff for c in wrong):.3g})")
        named = [f for f in self.findings if b.marker in f.where]
        if self.findings:
            parts.append("the line is named by " + (", ".join(f"{f.method} ({f.cost_said()})"
                                                             for f in named) or "none of the NaN methods"))
        return f"{b.title}: " + "; ".join(parts) + "."

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "config": self.config, "bug": self.bug, "bug_what": BUGS[self.bug].what,
                "text": self.text, "tokens": self.tokens, "verdict": self.verdict(),
                "modes": [m.as_dict() for m in self.modes], "nan": [f.as_dict() for f in self.findings],
                "comparison": [c.as_dict() for c in self.comparisons],
                "graph_change": None if self.graph is None else vars(self.graph),
                "inspection": [r.as_dict() for r in self.inspection],
                "partial": None if self.partial is None else {
                    "nodes": len(self.partial.graph.nodes), "line": self.partial.line, "code": self.partial.code,
                    "error": self.partial.error, "last": self.partial.last}}


def _compiled(service: JobRunner, job: DebugJob | InspectJob, label: str) -> Iterator[Progress | Any]:
    try:
        for item in service.run(job):
            said = isinstance(item, Progress)
            yield Progress(item.elapsed_s, f"{label}: {item.phase}") if said else item
    except WorkerFailure as e:  # a timeout or a crash of the worker: an outcome too
        yield e


def run_debug(service: JobRunner, model: str, config: object, bug: str, text: str, modes: list[str],
              source: str = "") -> Iterator[Progress | DebugResult]:
    """Each mode in turn (compiled ones in the worker), then the NaN methods, the comparison and the inspection.
    `source`, the model's file as edited in the Code tab, runs only inside the code worker (explorer/code/debug.py
    runs this whole function there)."""
    if bug not in BUGS:
        raise InputError(f"unknown bug {bug!r}; bugs are: {', '.join(BUGS)}")
    if unknown := [m for m in modes if m not in MODES]:
        raise InputError(f"unknown mode(s) {unknown}; modes are: {', '.join(MODES)}")
    values = config_dict(config)
    tokens = tokenize(text)
    ids = tokens.ids
    outcomes: list[ModeOutcome] = []
    for i, mode in enumerate(modes, 1):
        yield Progress.said(f"Running the bugged model: {mode} ({i} of {len(modes)})")
        if mode == "eager":
            outcomes.append(eager(model, values, bug, ids, source))
        elif mode == "traced":
            outcomes.append(traced(model, values, bug, ids, source))
        else:
            backend = mode.removeprefix("compiled (").removesuffix(")")
            for item in _compiled(service, DebugJob(model, values, bug, ids[0].tolist(), backend, source), mode):
                if isinstance(item, Progress):
                    yield item
                elif isinstance(item, WorkerFailure):
                    outcomes.append(ModeOutcome(mode, True, None, Failure.of(item), None, None))  # not measured
                else:
                    outcomes.append(item)
    result = DebugResult(model, values, bug, tokens.text, ids.shape[1], outcomes)
    if any(m.mode == "eager" and m.failed for m in outcomes):
        yield Progress.said("Recording the graph eager mode built before it raised")
        result.partial = record_partial(bugged(model, values, bug, source), ids)  # None: it raised after the forward
    if bug.startswith("nan"):
        yield Progress.said("Locating the NaN: detect_anomaly, forward hooks, a dispatch mode")
        try:
            result.findings = locate(bugged(model, values, bug, source), ids)
        except Exception:  # the model raises on the NaN (an edit's check): its traceback, in the modes, is the answer
            result.findings = []
    yield Progress.said("Comparing with the un-bugged model at several lengths")
    result.comparisons = compare(model, values, bug, comparison_texts(tokens.text, list(COMPARE_LENGTHS)), source)
    result.graph = graph_change(model, values, bug, tokens.text, source)
    yield Progress.said("Recording a hidden state with a hook, eagerly and compiled")
    eager_rec = record(model, values, ids[0].tolist(), source=source)
    result.inspection = [eager_rec]
    for item in _compiled(service, InspectJob(model, values, ids[0].tolist(), "eager", source), "inspection"):
        if isinstance(item, Progress):
            yield item
        elif isinstance(item, Recording):
            result.inspection.append(compared(eager_rec, item))
    yield result

