"""A session's compiled side, in the app: the jobs it sends, the compile timeline, and each input's
compiled figures labelled with what they really are."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from explorer.compile.jobs import PlaygroundJob, PlaygroundReply
from explorer.compile.observe import CompileEvent, Explanation, cache_said
from explorer.compile.options import CompileOptions, require_backend
from explorer.core.progress import Progress
from explorer.eager.compare import Comparison, Estimate
from explorer.eager.timing import Measurement
from explorer.workers.protocol import JobRunner


@dataclass(frozen=True)
class TimelineEntry:
    """One compilation in a session's timeline."""

    event: CompileEvent
    arch: str
    options: str  # CompileOptions.label()

    def as_dict(self) -> dict[str, Any]:
        e = self.event
        return {"length": e.length, "reason": e.reason, "dynamic": e.dynamic, "compile_s": e.compile_s,
                "cache": e.cache, "compile_id": e.compile_id, "frame": e.frame, "ops": e.ops, "arch": self.arch,
                "options": self.options}


@dataclass
class CompiledRun:
    """The compiled side of one input: what the worker measured, labelled with what it really is."""

    length: int
    arch: str
    options: CompileOptions
    eager: Measurement | None  # re-timed in the worker, in pairs with the compiled model
    compiled: Measurement | None  # None when the compile failed
    comparison: Comparison | None  # the two, paired: the speed-up's interval (None when the compile failed)
    peak_eager_bytes: int | None
    peak_compiled_bytes: int | None
    compile_s: float  # compile seconds this input triggered (0 on a cache hit)
    total_compile_s: float  # every compile second this model+options has cost the session so far
    fallback: str | None  # why the "compiled" figure is not one, or None
    graph_count: int  # distinct graphs compiled for this model+options so far
    explanation: Explanation
    events: list[CompileEvent] = field(default_factory=list)  # this input's compilations, with code
    caches: tuple[str, ...] = ()  # each compile counted in total_compile_s: what inductor's caches served

    @property
    def cache(self) -> str:
        """Whether inductor's caches served the compiles counted in total_compile_s ('cold', 'all 2 served...')."""
        return cache_said(self.caches)

    @property
    def speedup(self) -> float | None:
        """Eager median / compiled median over the paired samples; None when no compiled code ran (the fallback
        says why)."""
        if self.comparison is None or self.fallback:
            return None
        return self.comparison.ratio

    @property
    def faster(self) -> bool | None:
        """Whether compiled is faster by the whole interval: True, False (eager is), None (not resolved, or no
        compiled code ran)."""
        if self.speedup is None or self.comparison is None or not self.comparison.resolved:
            return None
        return self.comparison.faster == "compiled"

    @property
    def break_even(self) -> Estimate | None:
        """Calls after which the compile seconds are paid back, with the range the speed-up's interval implies;
        None if compiled is not resolved faster (never, or not known at this noise)."""
        if not self.faster or self.comparison is None:
            return None
        return self.comparison.paid_back(self.total_compile_s)

    @property
    def break_even_calls(self) -> int | None:
        return self.break_even.calls if self.break_even else None

    def as_dict(self) -> dict[str, Any]:
        ex = self.explanation
        return {
            "options": asdict(self.options),
            "forward": self.compiled.as_dict() if self.compiled else None,
            "eager_forward": self.eager.as_dict() if self.eager else None,
            "peak_forward_bytes": self.peak_compiled_bytes,
            "eager_peak_forward_bytes": self.peak_eager_bytes,
            "compile_s": self.compile_s,
            "total_compile_s": self.total_compile_s,
            "speedup": self.speedup,
            "speedup_interval": [self.comparison.low, self.comparison.high]
            if self.speedup is not None and self.comparison and self.comparison.enough else None,
            "pairs": self.comparison.pairs if self.comparison else None,
            "faster": self.faster,
            "break_even_calls": self.break_even_calls,
            "break_even_range": [math.ceil(self.break_even.low), math.ceil(self.break_even.high)]
            if self.break_even else None,
            "compile_cache": self.cache,
            "fallback": self.fallback,
            "graph_count": self.graph_count,
            "graph_breaks": [asdict(b) for b in ex.graph_breaks],
            "graph_break_count": ex.graph_break_count,
            "explain_graph_count": ex.graph_count,  # the graphs of the input `explanation` describes
        }


def honest_fallback(fallback: str | None, error: str | None, explanation: Explanation) -> str | None:
    """Why a compiled figure is not one: the compile failed, compiled code did not run, or dynamo skipped
    the whole forward (its compile captured no graph); None for a real compiled figure."""
    if error:
        return f"compile failed: {error}"
    if explanation.skipped:
        return (f"dynamo captured no graph (the model's forward was skipped): it runs eagerly. Why: "
                f"{explanation.skipped_said()}.")
    return fallback


@dataclass
class CompileTrack:
    """A session's compiled state: inputs compiled per model+config+options, and the timeline."""

    session_id: str
    inputs: dict[tuple, list[list[int]]] = field(default_factory=dict)
    compile_s: dict[tuple, float] = field(default_factory=dict)
    graphs: dict[tuple, set[str]] = field(default_factory=dict)
    caches: dict[tuple, list[str]] = field(default_factory=dict)  # per key, each compile's cache (as the seconds)
    timeline: list[TimelineEntry] = field(default_factory=list)
    runs: list[CompiledRun] = field(default_factory=list)

    @staticmethod
    def key(model: str, config: dict[str, Any], options: CompileOptions) -> tuple:
        """What the session's compiled inputs are kept under: the model, its config and the compile options."""
        return (model, repr(sorted(config.items())), options)

    def run(self, service: JobRunner, model: str, config: dict[str, Any], arch: str,
            options: CompileOptions, tokens: list[list[int]]) -> Iterator[Progress | CompiledRun]:
        """Compile and time each input in turn; yields progress, then one CompiledRun per input."""
        require_backend(options.backend)
        key = self.key(model, config, options)
        history = self.inputs.setdefault(key, [])
        job = PlaygroundJob(self.session_id, model, config, options, list(history), tokens)
        reply: PlaygroundReply | None = None
        for item in service.run(job):
            if isinstance(item, Progress):
                yield item
            else:
                reply = item
        assert reply is not None
        history.extend(tokens)
        for call in reply.calls:
            compile_s = sum(e.compile_s for e in call.events)
            self.compile_s[key] = self.compile_s.get(key, 0.0) + compile_s
            caches = self.caches.setdefault(key, [])
            caches += [e.cache for e in call.events]
            graphs = self.graphs.setdefault(key, set())
            graphs.update(e.compile_id for e in call.events)
            self.timeline += [TimelineEntry(e, arch, options.label()) for e in call.events]
            fig = call.figures
            cr = CompiledRun(
                length=call.length, arch=arch, options=options, eager=fig and fig.eager,
                compiled=fig and fig.compiled, comparison=fig and fig.comparison,
                peak_eager_bytes=fig and fig.peak_eager_bytes,
                peak_compiled_bytes=fig and fig.peak_compiled_bytes, compile_s=compile_s,
                total_compile_s=self.compile_s[key],
                fallback=honest_fallback(call.fallback, call.error, reply.explanation),
                graph_count=len(graphs), explanation=reply.explanation, events=call.events, caches=tuple(caches),
            )
            self.runs.append(cr)
            yield cr
