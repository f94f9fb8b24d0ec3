"""One session's edits of a zoo model's file: the original, every source that ran (the undo list), and the last
good run, against which the next edit's graph is diffed. The code itself only ever runs in the code worker."""

from __future__ import annotations

import difflib
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from explorer.code.job import CodeCostsJob, CodeJob, CodeRun, CodeTimingJob
from explorer.core.errors import InputError
from explorer.core.inputs import tokenize
from explorer.core.limits import CODE_TIMEOUT_S, MAX_TEXT_CHARS
from explorer.core.progress import Progress
from explorer.eager.costs import Costs
from explorer.eager.diff import GraphDiff, diff_graphs
from explorer.sources.edited import CodeError
from explorer.sources.registry import SOURCES, source
from explorer.workers.protocol import JobRunner


def original_source(model: str) -> str:
    """The model's file as it was loaded: a zoo model's, or the operator's own; InputError for a model without one
    (a library architecture, a notebook's object)."""
    file = source(model).file
    if file is None:
        editable = [s.name for s in SOURCES.values() if s.file is not None]
        raise InputError(f"the Code tab edits a model's own Python file ({', '.join(editable)}); {model} is built "
                         "by a library, with no file of its own to edit")
    with open(file, encoding="utf-8") as f:
        return f.read()


@dataclass(frozen=True)
class CodeOutcome:
    """What one edit did: its run, or where it broke (the last good run still stands), and its graph's change."""

    source: str
    run: CodeRun | None
    error: CodeError | None
    diff: GraphDiff | None
    good: CodeRun | None  # the run on screen: this one, or the last good one


@dataclass
class CodeEdits:
    model: str
    original: str
    kept: list[str] = field(default_factory=list)  # every source that ran, oldest first
    good: CodeRun | None = None
    text: str = ""  # the input the last good run read
    shown: str = ""  # the source the last good run built
    values: dict[str, Any] = field(default_factory=dict)  # the knobs the last good run was built with

    @classmethod
    def of(cls, model: str) -> CodeEdits:
        return cls(model, original_source(model))

    def run(self, source: str, values: Mapping[str, Any], text: str, worker: JobRunner
            ) -> Iterator[Progress | CodeOutcome]:
        """The edit built and run on `text` in `worker`; progress, its outcome with the graph, then (when it built)
        the outcome again with the forward's timing."""
        if len(source) > MAX_TEXT_CHARS:  # refused before the worker sees it
            raise InputError(f"the edited file has {len(source):,} characters; at most {MAX_TEXT_CHARS:,} "
                             "(GE_MAX_TEXT_CHARS)")
        ids = tuple(tokenize(text).ids[0].tolist())
        reply = yield from _replied(worker.run(CodeJob(self.model, source, dict(values), ids)))
        if isinstance(reply, CodeError):
            yield CodeOutcome(source, None, reply, None, self.good)
            return
        assert isinstance(reply, CodeRun)
        diff = None
        if self.good is not None and text == self.text:
            diff = diff_graphs(self.good.fixed.capture.graph, reply.fixed.capture.graph,
                               "the previous code -> this code (the same input)")
        self.good, self.text, self.shown, self.values = reply, text, source, dict(values)
        if not self.kept or self.kept[-1] != source:
            self.kept.append(source)
        yield CodeOutcome(source, reply, None, diff, reply)
        timed = yield from _replied(worker.run(CodeTimingJob(source, ids)))
        if isinstance(timed, CodeError):
            yield CodeOutcome(source, None, timed, None, reply)
        elif timed is not None:
            self.good = replace(reply, forward=timed)
            yield CodeOutcome(source, self.good, None, diff, self.good)

    def costs(self, worker: JobRunner) -> Generator[Progress, None, Costs]:
        """Where the last good edit's train step spent its time, node by node, profiled in `worker` on the model it
        built there (`costs = yield from edits.costs(worker)`); refused in one line where there is none."""
        if self.good is None or self.shown is None:
            raise InputError("Run an edit first: the profiler takes the last edit that ran.")
        graph = self.good.fixed.capture.graph
        job = CodeCostsJob(self.model, self.shown, dict(self.values), tuple(tokenize(self.text).ids[0].tolist()),
                           tuple(n.op for n in graph.nodes), self.good.fixed.capture.step_s,
                           getattr(worker, "timeout_s", CODE_TIMEOUT_S))
        reply = yield from _replied(worker.run(job))
        if isinstance(reply, CodeError):
            raise InputError(reply.text())
        return reply

    def on_screen(self, source: str, text: str) -> bool:
        """Whether the last good run is this source on this input (nothing to run again)."""
        return self.good is not None and (source, text) == (self.shown, self.text)

    def report(self, o: CodeOutcome) -> dict[str, Any]:
        """An edit that ran, for the session's report: the changed lines as a unified diff, and what it built."""
        assert o.run is not None
        graph = o.run.fixed.capture.graph
        return {"model": self.model, "input": self.text,
                "edit": "".join(difflib.unified_diff(self.original.splitlines(keepends=True),
                                                     o.source.splitlines(keepends=True), "shipped", "edited")),
                "nodes": len(graph.nodes), "edges": len(graph.edges),
                "forward": str(o.run.forward) if o.run.forward else None,
                "against_previous": o.diff.as_dict() if o.diff else None}

    def undo(self, editing: str | None = None) -> str:
        """Undo the last edit that ran. The editor holding something that did not run (an edit that failed, or one
        still being typed) goes back to the latest that ran, losing nothing that ran; else the source before the
        latest that ran (the original when there is none), dropping the latest."""
        if editing is not None and self.kept and editing != self.kept[-1]:
            return self.kept[-1]
        if len(self.kept) > 1:
            self.kept.pop()
            return self.kept[-1]
        return self.original


def _replied(items: Iterator[Progress | Any]) -> Generator[Progress, None, Any]:
    """A job's progress messages passed on; its reply returned."""
    reply = None
    for item in items:
        if isinstance(item, Progress):
            yield item
        else:
            reply = item
    return reply
