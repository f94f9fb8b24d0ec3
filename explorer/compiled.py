"""torch.compile of a zoo model, observed: every compilation, why it happened, and honest timings.

This module runs inside the compile worker process (see `worker.py`): dynamo's caches, counters
and recompile limits are process-global, so one process serves one session's compiled model at a
time. Everything here is plain data in, plain data out.
"""

from __future__ import annotations

import linecache
import logging
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch._dynamo as dynamo
import torch._dynamo.utils as dynamo_utils
from torch._guards import CompileContext

from explorer.capture import forward
from explorer.errors import InputError, one_line
from explorer.limits import FORWARD_BUDGET_S
from explorer.memory import MemoryProfile
from explorer.timing import Measurement, measure
from models import build_model, make_config

BACKENDS = ("inductor", "aot_eager", "eager")
DYNAMIC_MODES = {"auto": None, "true": True, "false": False}


@dataclass(frozen=True)
class CompileOptions:
    backend: str = "inductor"
    dynamic: str = "auto"  # "auto" (None: automatic dynamic shapes), "true" or "false"
    mark_dynamic: bool = False  # torch._dynamo.mark_dynamic on the sequence dimension
    fullgraph: bool = False

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"backend must be one of {', '.join(BACKENDS)}; got {self.backend!r}")
        if self.dynamic not in DYNAMIC_MODES:
            raise InputError(f"dynamic must be one of auto, true, false; got {self.dynamic!r}")

    def label(self) -> str:
        extra = [f"dynamic={self.dynamic}"] + ["mark_dynamic"] * self.mark_dynamic + ["fullgraph"] * self.fullgraph
        return f"{self.backend} ({', '.join(extra)})"


@dataclass
class CompileEvent:
    """One compilation: one FX graph handed to the backend."""

    length: int  # the input length whose call triggered it
    compile_id: str  # dynamo's "frame/attempt", e.g. "0/1" = frame 0's second compile
    frame: str  # the Python function dynamo was compiling
    reason: str  # the guard that failed, or why this is a first compile
    dynamic: bool  # the graph is symbolic in some size (serves many lengths)
    compile_s: float  # wall time from the start of the call (or the previous graph) to this graph being ready
    ops: int
    code: str = field(repr=False, default="")  # GraphModule.print_readable()
    fx: list[dict[str, Any]] = field(repr=False, default_factory=list)  # the FX nodes, for drawing

    def as_dict(self, with_code: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not with_code:
            d.pop("code")
            d.pop("fx")
        return d


def _fx_nodes(gm: torch.fx.GraphModule) -> list[dict[str, Any]]:
    def target(n: torch.fx.Node) -> str:
        if n.op in ("placeholder", "output"):
            return f"{n.op} {n.name}" if n.op == "placeholder" else "output"
        return getattr(n.target, "__name__", str(n.target))

    return [{"name": n.name, "op": n.op, "target": target(n), "inputs": [a.name for a in n.all_input_nodes]}
            for n in gm.graph.nodes]


@dataclass(frozen=True)
class GraphBreak:
    reason: str  # dynamo's one-line reason
    where: str  # the user's source file and line
    code: str = ""  # that line of source
    explanation: str = ""  # dynamo's plain-words explanation
    skipped: bool = False  # dynamo gave up on the whole function and runs it eagerly


@dataclass
class CallOutcome:
    length: int
    wall_s: float
    events: list[CompileEvent]
    fallback: str | None  # why this call did not run compiled code, if it did not
    error: str | None  # a compile that failed outright (e.g. fullgraph on a data-dependent branch)


def cxx_compiler() -> str | None:
    """The C++ compiler inductor would use on CPU, or None (then only eager/aot_eager work)."""
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def require_backend(backend: str) -> None:
    """Refuse inductor, with the way out, where no C++ compiler exists."""
    if backend == "inductor" and cxx_compiler() is None:
        raise InputError("inductor needs a C++ compiler and none was found on this machine (g++/c++); "
                         "choose backend aot_eager or eager.")


def _is_symbolic(example_inputs: list[Any]) -> bool:
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            return True
        if isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in x.shape):
            return True
    return False


_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+?):(?P<line>\d+)")


def _relative(path: str) -> str:
    """A source path as the user knows it: relative to the project, else as given."""
    root = str(Path(__file__).resolve().parent.parent) + "/"
    return path.removeprefix(root)


def _parse_break(message: str) -> GraphBreak | None:
    """A GraphBreak from one `graph_breaks` log record of dynamo."""
    m = _BREAK_AT.search(message)
    if not m:
        return None
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    reason = next((ln for ln in lines if ln.startswith(("Unsupported", "Data-dependent", "Attempted"))), None)
    if reason is None:
        reason = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Graph Break Reason")), lines[0])
    explanation = next((ln.removeprefix("Explanation:").strip() for ln in lines if ln.startswith("Explanation:")), "")
    code = linecache.getline(m.group("file"), int(m.group("line"))).strip()
    skipped = "falling back to eager" in message.lower() or "skipping the function" in message.lower()
    return GraphBreak(reason, f"{_relative(m.group('file'))}:{m.group('line')}", code, explanation, skipped)


class _BreakLog(logging.Handler):
    """Collects dynamo's graph-break log records while installed."""

    LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"

    def __init__(self) -> None:
        super().__init__()
        self.breaks: list[GraphBreak] = []

    def emit(self, record: logging.LogRecord) -> None:
        b = _parse_break(record.getMessage())
        if b is not None and b not in self.breaks:
            self.breaks.append(b)

    def __enter__(self) -> _BreakLog:
        torch._logging.set_logs(graph_breaks=True)
        logger = logging.getLogger(self.LOGGER)
        logger.addHandler(self)
        self._propagate, logger.propagate = logger.propagate, False  # keep them out of the console
        return self

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger(self.LOGGER)
        logger.removeHandler(self)
        logger.propagate = self._propagate
        torch._logging.set_logs()


class CountingBackend:
    """A dynamo backend that counts the graphs it compiles and the calls that really ran compiled code
    (the honest signal that a figure is a compiled one), optionally telling `on_graph` about each graph."""

    def __init__(self, backend: str, on_graph: Callable[[torch.fx.GraphModule, list[Any]], None] | None = None):
        self._inner = dynamo.lookup_backend(backend)
        self._on_graph = on_graph
        self.graphs = 0
        self.calls = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        compiled = self._inner(gm, example_inputs)
        self.graphs += 1
        if self._on_graph is not None:
            self._on_graph(gm, example_inputs)

        def run(*args: Any) -> Any:
            self.calls += 1
            return compiled(*args)

        return run


class CompiledModel:
    """A zoo model and its torch.compile'd twin, with every compilation recorded."""

    def __init__(self, model_name: str, config_values: dict[str, Any], options: CompileOptions):
        self.model_name, self.options = model_name, options
        self.config = make_config(model_name, config_values)
        self.model = build_model(model_name, self.config)
        self.events: list[CompileEvent] = []
        self._length = 0
        self._mark = 0.0
        self._backend = CountingBackend(options.backend, self._record)
        self.compiled = torch.compile(self.model, backend=self._backend, dynamic=DYNAMIC_MODES[options.dynamic],
                                      fullgraph=options.fullgraph)
        self.limit_hit_at: int | None = None

    def _record(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
        cid = CompileContext.current_compile_id()
        now = time.perf_counter()
        ctx = torch._guards.TracingContext.try_get()
        frame = getattr(getattr(ctx, "f_code", None), "co_name", None) or "forward"
        self.events.append(CompileEvent(
            length=self._length, compile_id=str(cid), frame=frame, reason="", dynamic=_is_symbolic(example_inputs),
            compile_s=now - self._mark,
            ops=sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")),
            code=gm.print_readable(print_output=False), fx=_fx_nodes(gm),
        ))
        self._mark = now

    def call(self, ids: torch.Tensor) -> CallOutcome:
        """Run the compiled model once at this input; compile if its guards say so."""
        self._length = ids.shape[1]
        if self.options.mark_dynamic:
            dynamo.mark_dynamic(ids, 1)
        failures_before = {code: len(v) for code, v in dynamo_utils.guard_failures.items()}
        first_new = len(self.events)
        start = self._mark = time.perf_counter()
        fallback = error = None
        graph_calls = self._backend.calls
        try:
            with torch.no_grad(), dynamo.config.patch(fail_on_recompile_limit_hit=True):
                self.compiled(ids)
        except dynamo.exc.FailOnRecompileLimitHit:
            self.limit_hit_at = self.limit_hit_at or ids.shape[1]
            fallback = (f"recompile limit ({dynamo.config.recompile_limit}) hit at length {ids.shape[1]}: "
                        "dynamo silently runs this frame eagerly from here on")
        except Exception as e:  # a failed compile is a result to show, not a crash
            error = one_line(e)
        wall = time.perf_counter() - start
        if fallback is None and error is None and self._backend.calls == graph_calls:
            fallback = "no compiled graph ran for this input: dynamo ran it eagerly" + (
                f" (the recompile limit was hit at length {self.limit_hit_at})" if self.limit_hit_at else "")
        new_reasons = [r for code, v in dynamo_utils.guard_failures.items() for r in v[failures_before.get(code, 0):]]
        for ev in self.events[first_new:]:
            frame_id = ev.compile_id.split("/")[0]
            match = [r for r in new_reasons if r.split(":", 1)[0].split("/")[0] == frame_id]
            ev.reason = match[-1].split(": ", 1)[-1] if match else "first compile of this frame"
        return CallOutcome(ids.shape[1], wall, self.events[first_new:], fallback, error)

    def measure(self, ids: torch.Tensor) -> tuple[Measurement, Measurement, int, int]:
        """Eager and compiled inference forward, timed back to back the same way, and their peaks."""
        compiled = self.compiled
        eager = measure("eager forward", lambda: forward(self.model, ids), FORWARD_BUDGET_S)
        comp = measure("compiled forward", lambda: forward(compiled, ids), FORWARD_BUDGET_S)
        peaks = []
        for fn in (self.model, compiled):
            with MemoryProfile() as mem:
                forward(fn, ids)
            peaks.append(mem.peak())
        return eager, comp, peaks[0], peaks[1]


def explain(model_name: str, config_values: dict[str, Any], ids: torch.Tensor) -> dict[str, Any]:
    """torch._dynamo.explain of a zoo model at this input (see `explain_module`)."""
    return explain_module(build_model(model_name, make_config(model_name, config_values)), ids)


def explain_module(model: torch.nn.Module, ids: torch.Tensor) -> dict[str, Any]:
    """torch._dynamo.explain of `model` at this input: graphs, breaks, and where they happen.

    explain() resets dynamo before and after: call it before compiling, never between calls."""
    with _BreakLog() as log, torch.no_grad():
        out = dynamo.explain(model)(ids)
    return {
        "graph_count": out.graph_count,
        # explain reports -1 when dynamo skipped the frame entirely (e.g. nn.GRU/nn.LSTM by default).
        "graph_break_count": out.graph_break_count,
        "graph_breaks": [asdict(b) for b in log.breaks],
        "skipped": out.graph_count == 0,
        "ops_per_graph": [len(ops) for ops in out.ops_per_graph],
    }
