"""Watching dynamo work (runs in the compile worker): each graph it compiles, its graph breaks with the
user's line, and one guarded call that says honestly whether compiled code ran.

The Playground's compiled model and the batching lab's compiled strategies both go through `run_guarded`
and `BreakLog`, so "fell back to eager" and "graph break" mean the same thing everywhere."""

from __future__ import annotations

import linecache
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch._dynamo as dynamo
import torch._dynamo.utils as dynamo_utils

from explorer.core.errors import one_line
from explorer.core.paths import EDITOR, PROJECT, in_editor, relative

# Dynamo's words for a cause it skips a function for, and the setting made to let it capture that instead.
LEVERS = (("RNN, GRU, or LSTM", "torch._dynamo.config.allow_rnn=True"),
          ("output shape depends on input Tensor data", "torch._dynamo.config.capture_dynamic_output_shape_ops=True"),
          ("Tensor.item()", "torch._dynamo.config.capture_scalar_outputs=True"))


@dataclass(frozen=True)
class FxNode:
    """One node of a captured FX graph, as plain data (for drawing it in the app)."""

    name: str
    op: str  # placeholder, call_function, call_method, call_module, get_attr, output
    target: str
    inputs: tuple[str, ...]


@dataclass
class CompileEvent:
    """One compilation: one FX graph handed to the backend."""

    length: int  # the input length whose call triggered it
    compile_id: str  # dynamo's "frame/attempt", e.g. "0/1" = frame 0's second compile
    frame: str  # the Python function dynamo was compiling
    reason: str  # the guard that failed, or why this is a first compile
    dynamic: bool  # the graph is symbolic in some size (serves many lengths)
    compile_s: float  # dynamo's own figure for this frame's compile (entire_frame_compile_time_s)
    ops: int
    cache: str = ""  # whether inductor's FX-graph and AOT-autograd caches served it: "fx hit, aot hit", ...
    code: str = field(repr=False, default="")  # GraphModule.print_readable()
    fx: tuple[FxNode, ...] = field(repr=False, default=())  # the FX nodes, for drawing


def fx_nodes(gm: torch.fx.GraphModule) -> tuple[FxNode, ...]:
    def target(n: torch.fx.Node) -> str:
        if n.op in ("placeholder", "output"):
            return f"{n.op} {n.name}" if n.op == "placeholder" else "output"
        return getattr(n.target, "__name__", str(n.target))

    return tuple(FxNode(n.name, n.op, target(n), tuple(a.name for a in n.all_input_nodes)) for n in gm.graph.nodes)


def is_symbolic(example_inputs: list[Any]) -> bool:
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            return True
        if isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in x.shape):
            return True
    return False


@dataclass(frozen=True)
class FrameCompile:
    """Dynamo's own record of compiling one frame (from `get_compilation_metrics`)."""

    compile_id: str
    seconds: float  # entire_frame_compile_time_s: tracing, the backend, guards
    cache: str  # "" for backends without caches (eager, aot_eager without its cache)


def _cache(m: Any) -> str:
    parts = []
    for what, hit, miss in (("fx", m.inductor_fx_local_cache_hit_count, m.inductor_fx_local_cache_miss_count),
                            ("aot", m.aotautograd_local_cache_hit_count, m.aotautograd_local_cache_miss_count)):
        if hit or miss:
            parts.append(f"{what} {'hit' if hit and not miss else 'miss'}")
    return ", ".join(parts)


def frame_compiles(since: float) -> list[FrameCompile]:
    """The frames dynamo compiled in this process since `since` (time.time()), in order."""
    return [FrameCompile(str(m.compile_id), m.entire_frame_compile_time_s or 0.0, _cache(m))
            for m in dynamo_utils.get_compilation_metrics()
            if m.start_time is not None and m.start_time >= since and m.compile_id is not None]


@dataclass(frozen=True)
class GraphBreak:
    reason: str  # dynamo's one-line reason
    where: str  # the user's source file and line
    code: str = ""  # that line of source
    explanation: str = ""  # dynamo's plain-words explanation
    skipped: bool = False  # dynamo gave up on the whole function and runs it eagerly
    times: int = field(default=1, compare=False)  # how often dynamo broke there (a loop breaks once per iteration)

    def one_line(self) -> str:
        return f"{self.reason} at {self.where}" + (f": {self.explanation}" if self.explanation else "")

    @property
    def lever(self) -> str | None:
        """The setting made for this cause, where dynamo's words name one of LEVERS' causes."""
        return next((setting for words, setting in LEVERS if words in f"{self.reason} {self.explanation}"), None)


def skip_cause(breaks: Sequence[GraphBreak]) -> str:
    """Why dynamo captured no graph, in the words of its own record: the cause, the user's line, and the setting
    made for that cause if there is one ('' when it recorded none)."""
    b = next((b for b in breaks if b.skipped), None)
    if b is None:
        return ""
    cause = b.explanation or b.reason
    return (f"{cause.rstrip('.')} at {b.where}" + (f" (`{b.code}`)" if b.code else "")
            + (f"; {b.lever} is the setting for it" if b.lever else ""))


_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+?):(?P<line>\d+)")


def parse_break(message: str) -> GraphBreak | None:
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
    return GraphBreak(reason, f"{relative(m.group('file'))}:{m.group('line')}", code, explanation, skipped)


class BreakLog(logging.Handler):
    """Collects dynamo's graph-break log records while installed (`with BreakLog() as log: ...`)."""

    LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"

    def __init__(self) -> None:
        super().__init__()
        self.breaks: list[GraphBreak] = []
        self.count = 0  # breaks as dynamo counts them: its `unimplemented` counter's growth meanwhile (a break that
        # happens while handling another, as a loop's frame skipped, is one more)

    def emit(self, record: logging.LogRecord) -> None:
        """Each distinct break once, with how often dynamo logged it (each occurrence is one break of its count)."""
        b = parse_break(record.getMessage())
        if b is None:
            return
        if b in self.breaks:
            i = self.breaks.index(b)
            self.breaks[i] = replace(self.breaks[i], times=self.breaks[i].times + 1)
        else:
            self.breaks.append(b)

    def __enter__(self) -> BreakLog:
        self._before = _unimplemented()
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
        self.count = max(_unimplemented() - self._before, sum(b.times for b in self.breaks))


def _unimplemented() -> int:
    return sum(dynamo_utils.counters["unimplemented"].values())


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


@dataclass(frozen=True)
class CompileAt:
    """One compile along a run: where it asked (a generation step, a request of a stream), dynamo's seconds, the
    guard that failed ("first compile" for the first), and whether inductor's caches served it."""

    at: int
    seconds: float
    reason: str
    cache: str = ""  # as FrameCompile.cache


def cache_said(caches: Sequence[str]) -> str:
    """Whether inductor's caches served these compiles, said beside their seconds wherever those enter a figure (a
    cold inductor compile takes 10x and more the seconds of one the cache served): a compile with no hit is cold."""
    return served_said(cache_served(caches), len(caches))


def cache_served(caches: Sequence[str]) -> int:
    """How many of these compiles inductor's caches served (a hit and no miss)."""
    return sum(1 for c in caches if c and "miss" not in c)


def served_said(served: int, n: int) -> str:
    """`served` of `n` compiles served by inductor's caches, in words."""
    if n == 0:
        return "no compile"
    if served == n:
        return "served by inductor's caches" if n == 1 else f"all {n} served by inductor's caches"
    if served == 0:
        return "cold" if n == 1 else f"all {n} cold"
    return f"{served} of {n} served by inductor's caches, {n - served} cold"


class CompileLog:
    """The compiles a run triggers, each with where it was (`at`, set by the caller as the run goes) and the guard
    whose failure asked for it: pass `on_graph` to CountingBackend, then read `since(began)` at the end."""

    def __init__(self) -> None:
        self.at = 0
        self._asked: list[tuple[int, str]] = []
        self._failures = sum(len(v) for v in dynamo_utils.guard_failures.values())

    def on_graph(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
        reasons = [r for v in dynamo_utils.guard_failures.values() for r in v]
        new, self._failures = reasons[self._failures:], len(reasons)
        self._asked.append((self.at, "; ".join(new)[:300] if new else "first compile"))

    def since(self, began: float) -> list[CompileAt]:
        """Each graph compiled, with dynamo's seconds for its frame (time.time() `began` before the run)."""
        frames = frame_compiles(began)
        frames += [FrameCompile("", 0.0, "")] * (len(self._asked) - len(frames))
        return [CompileAt(at, f.seconds, why, f.cache) for (at, why), f in zip(self._asked, frames, strict=False)]


# torch 2.13's inductor lowers a scan to a while_loop whose body reads its step with .item(): the fake tensor refuses
# that unless dynamo captures scalar outputs, so a model with a scan compiles under inductor only with them on
SCALAR_OUTPUTS = "torch._dynamo.config.capture_scalar_outputs=True"
SCALAR_OUTPUTS_WHY = (f"compiled with {SCALAR_OUTPUTS}: torch 2.13's inductor lowers a scan to a loop that reads its "
                      "step with .item(), which fails without it")


def needs_scalar_outputs(error: str | None) -> bool:
    """Whether a compile failed the way a scan fails under inductor without captured scalar outputs."""
    return bool(error) and "DataDependentOutputException: aten._local_scalar_dense" in error


_USER_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def message_line(e: BaseException) -> str:
    """The line of an exception's message a person reads first: its first non-empty line, colour codes removed;
    TorchScript puts its real message last, after the interpreter's frames."""
    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if first.startswith("The following operation failed in the TorchScript interpreter") and len(lines) > 1:
        first = lines[-1]
    return first.removeprefix(type(e).__name__ + ": ")


def user_line(e: BaseException) -> str:
    """' (at models/x.py:N: <source>)' for the last frame of this project's code that dynamo's message names,
    or '' (dynamo puts the user's line in the message's "from user code" part, not in the traceback)."""
    frames = [m for m in _USER_FRAME.finditer(str(e)) if m.group("file") == EDITOR
              or (m.group("file").startswith(PROJECT) and "/site-packages/" not in m.group("file"))]
    if not frames:
        return ""
    file, line = frames[-1].group("file"), int(frames[-1].group("line"))
    return f" (at {in_editor(f'{relative(file)}:{line}')}: {linecache.getline(file, line).strip()})"


@dataclass(frozen=True)
class GuardedRun:
    """What one call of compiled code really did."""

    fallback: str | None  # why no compiled code ran (the recompile limit, nothing captured), or None
    error: str | None  # the compile failed outright (e.g. fullgraph on a data-dependent branch)

    @property
    def compiled(self) -> bool:
        return self.fallback is None and self.error is None


def run_guarded(fn: Callable[[], object], counter: CountingBackend, where: str = "") -> GuardedRun:
    """Call `fn` (which calls compiled code) with the recompile limit made loud, and say honestly whether any
    compiled graph ran: past the limit dynamo would silently run eagerly. `where` says which call this was."""
    calls = counter.calls
    fallback = error = None
    try:
        with dynamo.config.patch(fail_on_recompile_limit_hit=True):
            fn()
    except dynamo.exc.FailOnRecompileLimitHit:
        fallback = (f"recompile limit ({dynamo.config.recompile_limit}) hit{where}: past it dynamo silently runs "
                    "this frame eagerly")
    except Exception as e:  # a failed compile is a result to show, not a crash
        error = one_line(e) + user_line(e)
    if fallback is None and error is None and counter.calls == calls:
        fallback = f"no compiled graph ran{where}: dynamo ran it eagerly"
    return GuardedRun(fallback, error)


@dataclass(frozen=True)
class Explanation:
    """What dynamo made of one input, observed on the real compile (not a separate `torch._dynamo.explain` pass,
    which would trace the model again and reset dynamo): the graphs it compiled and where it broke them."""

    length: int  # the input whose compile this describes
    graph_count: int  # graphs compiled for it (0: dynamo skipped the whole forward)
    graph_break_count: int  # breaks as dynamo counts them (each occurrence); -1 when dynamo skipped the frame
    graph_breaks: tuple[GraphBreak, ...]  # the distinct ones, each with how often it happened

    @property
    def skipped(self) -> bool:
        return self.graph_count == 0

    def breaks_said(self) -> str:
        """'3 graph break(s)', or for a forward dynamo skipped, that no graph was captured (never a count of -1)."""
        if self.skipped:
            return "no graph: dynamo skipped the forward"
        return f"{self.graph_break_count} graph break(s)"

    def skipped_said(self) -> str:
        """Why the forward runs eagerly: dynamo's recorded cause at its line, or that it recorded none."""
        return skip_cause(self.graph_breaks) or "dynamo recorded no reason"

    @classmethod
    def of(cls, length: int, events: list[CompileEvent], breaks: list[GraphBreak],
           count: int | None = None) -> Explanation:
        """`count`: dynamo's own count of the breaks (BreakLog.count); default, the logged occurrences."""
        counted = sum(b.times for b in breaks) if count is None else count
        return cls(length, len(events), counted if events else -1, tuple(breaks))
