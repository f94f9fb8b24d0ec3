"""Eager vs compiled for a session's run: the compiled figures, the compile timeline, honest labels."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from explorer.compiled import CompileOptions, cxx_compiler, require_backend
from explorer.graph import AutogradGraph, GraphNode
from explorer.timing import Measurement
from explorer.worker import CompileService, Progress
from models import ZOO, make_config
from models.config import config_dict
from models.tokenizer import encode


@dataclass
class CompiledRun:
    """The compiled side of one input: what the worker measured, labelled with what it really is."""

    length: int
    arch: str
    options: CompileOptions
    eager: Measurement | None  # re-timed in the worker, back to back with the compiled model
    compiled: Measurement | None  # None when the compile failed
    peak_eager_bytes: int | None
    peak_compiled_bytes: int | None
    compile_s: float  # compile seconds this input triggered (0 on a cache hit)
    total_compile_s: float  # every compile second this model+options has cost the session so far
    fallback: str | None  # why the "compiled" figure is not one, or None
    graph_count: int  # distinct graphs compiled for this model+options so far
    explain: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)  # this input's compilations, with code

    @property
    def speedup(self) -> float | None:
        if self.eager is None or self.compiled is None:
            return None
        return self.eager.median_ms / self.compiled.median_ms

    @property
    def break_even_calls(self) -> int | None:
        """Calls after which the compile time is paid back, or None (never) if compiled is not faster."""
        if self.eager is None or self.compiled is None or self.fallback:
            return None
        saving_ms = self.eager.median_ms - self.compiled.median_ms
        if saving_ms <= 0:
            return None
        return math.ceil(self.total_compile_s * 1e3 / saving_ms)

    @property
    def graph_breaks(self) -> list[dict[str, Any]]:
        return self.explain.get("graph_breaks", [])

    def as_dict(self) -> dict[str, Any]:
        return {
            "options": asdict(self.options),
            "forward": self.compiled.as_dict() if self.compiled else None,
            "eager_forward": self.eager.as_dict() if self.eager else None,
            "peak_forward_bytes": self.peak_compiled_bytes,
            "eager_peak_forward_bytes": self.peak_eager_bytes,
            "compile_s": self.compile_s,
            "total_compile_s": self.total_compile_s,
            "speedup": self.speedup,
            "break_even_calls": self.break_even_calls,
            "fallback": self.fallback,
            "graph_count": self.graph_count,
            "graph_breaks": self.graph_breaks,
            "graph_break_count": self.explain.get("graph_break_count"),
            "explain_graph_count": self.explain.get("graph_count"),
        }


def _measurement(d: dict[str, Any] | None) -> Measurement | None:
    return Measurement(**d) if d else None


def _fallback(run: dict[str, Any], explain: dict[str, Any]) -> str | None:
    if run["error"]:
        return f"compile failed: {run['error']}"
    if run["fallback"]:
        return run["fallback"]
    if explain.get("graph_count", 1) == 0:
        return ("dynamo captured no graph (the model's forward was skipped): the 'compiled' model runs eagerly. "
                "torch 2.13 skips nn.RNN/GRU/LSTM modules unless torch._dynamo.config.allow_rnn=True.")
    return None


@dataclass
class CompileTrack:
    """A session's compiled state: inputs compiled per model+config+options, and the timeline."""

    session_id: str
    inputs: dict[tuple, list[list[int]]] = field(default_factory=dict)
    compile_s: dict[tuple, float] = field(default_factory=dict)
    graphs: dict[tuple, set[str]] = field(default_factory=dict)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    runs: list[CompiledRun] = field(default_factory=list)

    def run(self, service: CompileService, model: str, config: dict[str, Any], arch: str,
            options: CompileOptions, tokens: list[list[int]]) -> Iterator[Progress | CompiledRun]:
        """Compile and time each input in turn; yields progress, then one CompiledRun per input."""
        require_backend(options.backend)
        key = (model, repr(sorted(config.items())), options)
        history = self.inputs.setdefault(key, [])
        job = {"session": self.session_id, "model": model, "config": config, "options": asdict(options),
               "history": history, "inputs": tokens}
        result: dict[str, Any] = {}
        for item in service.run(job):
            if isinstance(item, Progress):
                yield item
            else:
                result = item
        history.extend(tokens)
        for r in result["runs"]:
            compile_s = sum(e["compile_s"] for e in r["events"])
            self.compile_s[key] = self.compile_s.get(key, 0.0) + compile_s
            graphs = self.graphs.setdefault(key, set())
            graphs.update(e["compile_id"] for e in r["events"])
            for e in r["events"]:
                self.timeline.append({**{k: v for k, v in e.items() if k not in ("code", "fx")}, "arch": arch,
                                      "options": options.label()})
            cr = CompiledRun(
                length=r["length"], arch=arch, options=options, eager=_measurement(r.get("eager")),
                compiled=None if r["error"] else _measurement(r.get("compiled")),
                peak_eager_bytes=r.get("peak_eager_bytes"), peak_compiled_bytes=r.get("peak_compiled_bytes"),
                compile_s=compile_s, total_compile_s=self.compile_s[key], fallback=_fallback(r, result["explain"]),
                graph_count=len(graphs), explain=result["explain"], events=r["events"],
            )
            self.runs.append(cr)
            yield cr


def fx_graph(nodes: list[dict[str, Any]]) -> AutogradGraph:
    """An FX graph (as the worker describes it) in the shape the graph renderer draws."""
    index = {n["name"]: i for i, n in enumerate(nodes)}
    graph_nodes = [GraphNode(i, n["target"], n["op"], 0, None, None) for i, n in enumerate(nodes)]
    edges = [(index[a], index[n["name"]]) for n in nodes for a in n["inputs"] if a in index]
    return AutogradGraph(graph_nodes, edges, len(nodes) - 1)


def warm_compile_cache(service: CompileService) -> list[str]:
    """Compile every model's default config once with inductor, so a fresh app's first compiled view
    pays ~2 s instead of the one-time toolchain cost (~15-25 s); the cache is inductor's own on disk.
    Returns one line per model, for the log."""
    if cxx_compiler() is None:
        return ["no C++ compiler: inductor unavailable, offer aot_eager or eager"]
    done = []
    for name in ZOO:
        track = CompileTrack("start-up warm-up")
        start = time.monotonic()
        try:
            for _ in track.run(service, name, config_dict(make_config(name)), name, CompileOptions(),
                               [encode("warm up")]):
                pass
            done.append(f"{name}: {time.monotonic() - start:.1f} s")
        except Exception as e:  # a warm-up failure must not stop the app; the real compile will say why
            done.append(f"{name}: failed ({e})")
    return done
