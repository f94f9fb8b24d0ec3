"""The report of a run: the JSON panel, `inspect --json`, and the API all return this dict.

Its keys are a public interface (documented in docs/cli.md); add keys, never rename them.
"""

from __future__ import annotations

from typing import Any

from explorer.compile.track import CompileTrack
from explorer.core import limits, machine
from explorer.runs.session import Captured, RunResult
from explorer.sources.registry import source
from models.config import config_dict


def captured_report(c: Captured, note: str) -> dict[str, Any]:
    """A run's report while it is only captured (or will not be timed): what its graph determines, and why the
    timings are not there; never an earlier run's numbers in their place."""
    graph = c.fixed.capture.graph
    return {"model": c.model, "config": config_dict(c.config), "arch": c.arch, "text": c.input.text,
            "tokens": c.tokens, "truncated": c.input.truncated_from is not None, "graph": graph.summary(),
            "eager": None, "timing_note": note, "trace": c.fixed.capture.trace,
            "structure": source(c.model).structure(c.fixed.capture.trace)}


def build_report(r: RunResult, track: CompileTrack | None = None) -> dict[str, Any]:
    """The run's report; with the session's compile track, its compiled side too."""
    c = r.capture
    report: dict[str, Any] = {
        "model": r.model,
        "config": config_dict(r.config),
        "arch": r.arch,
        "run": r.number,
        "text": r.input.text,
        "tokens": r.tokens,
        "truncated": r.input.truncated_from is not None,
        "notices": r.notices,
        "params": r.params,
        "graph": c.graph.summary(),
        "eager": {"forward": r.forward.as_dict(), "train_step": r.train_step.as_dict(),
                  "timing_note": r.timing_note, "measured_on": r.node},
        "memory": {
            "saved_bytes": c.saved_bytes,
            "param_bytes": r.param_bytes,
            "peak_forward_bytes": r.memory.forward if r.memory else None,
            "peak_grad_forward_bytes": r.memory.grad_forward if r.memory else None,
            "peak_train_bytes": r.memory.train if r.memory else None,
        },
        "trace": c.trace,
        "structure": source(r.model).structure(c.trace),
        "machine": {**machine.describe(), "node": r.node or machine.describe()["node"]},
        "limits": limits.describe(),
    }
    if r.diff is not None:
        report["diff"] = r.diff.as_dict()
    if r.compiled is not None:
        report["compiled"] = r.compiled.as_dict()
        report["compiled_by_length"] = [
            {"length": c.length, "eager_ms": c.eager.median_ms if c.eager else None,
             "compiled_ms": c.compiled.median_ms if c.compiled else None, "speedup": c.speedup,
             "compile_s": c.compile_s, "fallback": c.fallback}
            for c in (track.runs if track else [])
        ]
        report["timeline"] = [e.as_dict() for e in (track.timeline if track else [])]
    return report
