"""A zoo model and its torch.compile'd twin, every compilation recorded (runs in the compile worker).

Dynamo's caches, counters and recompile limits are process-global, so the worker holds one of these at a
time (see `jobs.py`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo as dynamo
import torch._dynamo.utils as dynamo_utils
from torch._guards import CompileContext, TracingContext

from explorer.compile.observe import (
    SCALAR_OUTPUTS_WHY,
    BreakLog,
    CompileEvent,
    CountingBackend,
    Explanation,
    frame_compiles,
    fx_nodes,
    is_symbolic,
    needs_scalar_outputs,
    run_guarded,
)
from explorer.compile.options import DYNAMIC_MODES, CompileOptions
from explorer.core.limits import FORWARD_BUDGET_S
from explorer.eager.capture import forward
from explorer.eager.compare import Comparison, compare
from explorer.eager.memory import MemoryProfile
from explorer.eager.timing import Measurement
from explorer.sources.edited import model_of
from explorer.sources.registry import make_config


@dataclass
class CallOutcome:
    length: int
    events: list[CompileEvent]
    fallback: str | None  # why this call did not run compiled code, if it did not
    error: str | None  # a compile that failed outright
    explanation: Explanation | None  # what dynamo made of this input; None when nothing was compiled for it


@dataclass(frozen=True)
class ForwardFigures:
    """Eager and compiled inference forward at one input, timed in interleaved pairs, and their peaks."""

    comparison: Comparison  # eager (a) against compiled (b)
    peak_eager_bytes: int
    peak_compiled_bytes: int

    @property
    def eager(self) -> Measurement:
        return self.comparison.measurement("eager")

    @property
    def compiled(self) -> Measurement:
        return self.comparison.measurement("compiled")


class CompiledModel:
    def __init__(self, model_name: str, config_values: dict[str, Any], options: CompileOptions, source: str = "",
                 on_graph: Callable[[str, torch.fx.GraphModule, list[Any]], None] | None = None):
        """`source`: the model's file as edited in the Code tab, built from it (in the confined code worker only);
        `on_graph(compile_id, graph, example_inputs)`: told of each graph as the backend gets it."""
        self.model_name, self.options, self._on_graph = model_name, options, on_graph
        self.config = make_config(model_name, config_values)
        self.model = model_of(model_name, config_values, source)
        self.events: list[CompileEvent] = []
        self._length = 0
        self._mark = 0.0
        self._backend = CountingBackend(options.backend, self._record)
        self.compiled = torch.compile(self.model, backend=self._backend, dynamic=DYNAMIC_MODES[options.dynamic],
                                      fullgraph=options.fullgraph)
        self.limit_hit_at: int | None = None
        self.scalar_outputs = False  # on once a compile needed it (a scan under inductor), for every later call

    @property
    def compiled_calls(self) -> int:
        """Calls that reached compiled code so far (a figure whose calls did not is eager in disguise)."""
        return self._backend.calls

    def _record(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
        now = time.perf_counter()
        ctx = TracingContext.try_get()
        frame = getattr(getattr(ctx, "f_code", None), "co_name", None) or "forward"
        self.events.append(CompileEvent(
            length=self._length, compile_id=str(CompileContext.current_compile_id()), frame=frame, reason="",
            dynamic=is_symbolic(example_inputs), compile_s=now - self._mark,  # until dynamo's own figure is in
            ops=sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")),
            code=gm.print_readable(print_output=False), fx=fx_nodes(gm),
        ))
        self._mark = now
        if self._on_graph is not None:
            self._on_graph(self.events[-1].compile_id, gm, example_inputs)

    def _first_reason(self, ev: CompileEvent) -> str:
        if ev.dynamic and self.options.dynamic == "auto" and not self.options.mark_dynamic:
            return ("first compile of this frame, symbolic from the start: dynamo's automatic-dynamic profile "
                    "(shared by this app's sessions, kept on disk) already saw the length vary")
        return "first compile of this frame"

    def call(self, ids: torch.Tensor) -> CallOutcome:
        """Run the compiled model once at this input; compile if its guards say so."""
        length = self._length = ids.shape[1]
        if self.options.mark_dynamic:
            dynamo.mark_dynamic(ids, 1, min=self.options.mark_min, max=self.options.mark_max)
        failures_before = {code: len(v) for code, v in dynamo_utils.guard_failures.items()}
        first_new = len(self.events)
        self._mark = time.perf_counter()
        since = time.time()
        with torch.no_grad(), BreakLog() as breaks, self._config():
            ran = run_guarded(lambda: self.compiled(ids), self._backend, f" at length {length}")
        if not self.scalar_outputs and needs_scalar_outputs(ran.error):
            self.scalar_outputs = True
            del self.events[first_new:]
            return self.call(ids)
        frames = {f.compile_id: f for f in frame_compiles(since)}
        fallback = ran.fallback
        if ran.error is None and ran.fallback and ran.fallback.startswith("recompile limit"):
            self.limit_hit_at = self.limit_hit_at or length
        elif fallback and self.limit_hit_at:
            fallback += f" (the recompile limit was hit at length {self.limit_hit_at})"
        new_reasons = [r for code, v in dynamo_utils.guard_failures.items() for r in v[failures_before.get(code, 0):]]
        for ev in self.events[first_new:]:
            frame_id = ev.compile_id.split("/")[0]
            match = [r for r in new_reasons if r.split(":", 1)[0].split("/")[0] == frame_id]
            # Every guard that failed for this frame (the static graph's and the symbolic one's), each once.
            failed = list(dict.fromkeys(r.split(": ", 1)[-1] for r in match))
            ev.reason = "; ".join(failed) if failed else self._first_reason(ev)
            if self.scalar_outputs:
                ev.reason += f"; {SCALAR_OUTPUTS_WHY}"
            if length <= 1:
                ev.reason += ("; dynamo specializes sizes 0 and 1 (a symbolic size starts at 2), so a 1-token input "
                              "gets a graph of its own")
            if ev.compile_id in frames:
                ev.compile_s, ev.cache = frames[ev.compile_id].seconds, frames[ev.compile_id].cache
        new = self.events[first_new:]
        # Dynamo worked on this input if it compiled, broke or failed; else its graphs came from earlier inputs.
        worked = new or breaks.breaks or ran.error
        explanation = Explanation.of(length, new, breaks.breaks, breaks.count) if worked else None
        return CallOutcome(length, new, fallback, ran.error, explanation)

    def _config(self) -> Any:
        return dynamo.config.patch(capture_scalar_outputs=self.scalar_outputs)

    def measure(self, ids: torch.Tensor) -> ForwardFigures:
        compiled = self.compiled
        with self._config():
            pair = compare("eager", lambda: forward(self.model, ids), "compiled", lambda: forward(compiled, ids),
                           2 * FORWARD_BUDGET_S)
            peaks = []
            for fn in (self.model, compiled):
                with MemoryProfile() as mem:
                    forward(fn, ids)
                peaks.append(mem.peak())
        return ForwardFigures(pair, peaks[0], peaks[1])
