"""A person's session: the current model and config, the history of runs for the plots, the compiled side
and each lab's latest report. Built from the eager and compile engines; the runs and views read it."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun, CompileTrack
from explorer.core.errors import InputError
from explorer.core.fmt import count
from explorer.core.inputs import TokenizedText, tokenize
from explorer.core.limits import HISTORY_LENGTH, MAX_RUN_S
from explorer.core.progress import Progress
from explorer.eager.branches import Across, across, forks_of
from explorer.eager.capture import Capture
from explorer.eager.costs import Costs, profile_costs, repeats_within
from explorer.eager.diff import GraphDiff, diff_graphs
from explorer.eager.lines import LinesRan, record_lines
from explorer.eager.memory import MemoryPeaks
from explorer.eager.partial import ForwardRaised, PartialGraph
from explorer.eager.timing import Measurement
from explorer.serving.isolated import CaptureJob, CostsJob, LinesJob, captured_here
from explorer.serving.plan import Plan, plan
from explorer.serving.pool import Timed, TimingJob
from explorer.serving.queueing import NOT_PROFILED
from explorer.serving.residency import Residency
from explorer.serving.shared import CAPTURING, FIXED, LINES, Fixed, Sourced, run_key
from explorer.serving.timings import InProcess
from explorer.sources.registry import build_model, check_architecture, make_config, source
from explorer.workers.protocol import JobRunner
from models import arch_label
from models.config import config_dict

DEFAULT_MODEL = "rnn"


SETTLE_S = 1.5  # a typed input left alone this long after its run is what the person meant: it stays


BRANCH_INPUTS = 20  # the earlier inputs a session's branches are read over (each a pass of its own, once)

@dataclass
class RunRecord:
    """One point of a session's history: the figures of a run, without its graph."""

    number: int
    model: str
    arch: str
    tokens: int
    nodes: int
    forward: Measurement
    train_step: Measurement
    memory: MemoryPeaks | None = None
    text: str = ""  # the input (the branches across a session's inputs re-read its lines)
    config: Any = None


class RunLock:
    """One run at a time per session (two events of one tab, e.g. a restored link and the edit it causes, must
    not both measure). A copy gets a lock of its own: Gradio deep-copies each new session's state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def __deepcopy__(self, memo: dict) -> RunLock:
        return RunLock()


@dataclass(frozen=True)
class Captured:
    """The first stage of a run: the graph an input built (and its diff), before anything is timed."""

    model: str
    config: Any
    arch: str
    input: TokenizedText
    compare: str
    fixed: Fixed  # what the input determines, shared by every session that runs it
    diff: GraphDiff | None
    keyed: bool = False  # its input came from keystrokes (it stays only once left alone, submitted or left)
    typing: bool = False  # it follows such a run without a pause: that one was a step of the typing, replaced

    @property
    def tokens(self) -> int:
        return self.input.tokens

    @property
    def capture(self) -> Capture:
        return self.fixed.capture

    @property
    def key(self) -> str:
        return run_key(self.model, self.config, self.input.text)


@dataclass
class RunResult:
    """Everything measured for one input on one architecture."""

    number: int
    model: str
    config: Any
    arch: str  # short label of the architecture, for plot legends
    input: TokenizedText
    compare: str  # the comparison input it was diffed against ("" for the previous run)
    capture: Capture
    forward: Measurement
    train_step: Measurement
    params: int
    param_bytes: int
    diff: GraphDiff | None
    memory: MemoryPeaks | None = None  # the profiler's peaks (None: not profiled, over GE_MAX_RUN_S)
    compiled: CompiledRun | None = None  # filled by Session.run_compiled (in the compile worker)
    timing_note: str | None = None  # reused from another session, shortened, waited: said with the figures
    node: str = ""  # the host whose core timed it

    @property
    def tokens(self) -> int:
        return self.input.tokens

    def record(self) -> RunRecord:
        return RunRecord(self.number, self.model, self.arch, self.tokens, len(self.capture.graph.nodes),
                         self.forward, self.train_step, self.memory, self.input.text, self.config)

    @property
    def notices(self) -> list[str]:
        return [n for n in (self.input.notice,) if n]


@dataclass
class Session:
    model_name: str = DEFAULT_MODEL
    config: Any = None
    history: deque[RunRecord] = field(default_factory=lambda: deque(maxlen=HISTORY_LENGTH))
    last: RunResult | None = None  # the latest run in full
    shown: Captured | None = None  # the latest graph captured, timed or not: the run on screen
    baseline: RunResult | None = None  # the run the next is diffed against: the latest that stayed (see `typing`)
    labs: dict[str, dict[str, Any]] = field(default_factory=dict)  # each lab's latest report, by lab name
    profiled: tuple[str, Costs] | None = field(default=None, repr=False)  # the latest costs, with their run's key
    picked: tuple[str, int] | None = None  # the graph node a person clicked last, with its run's key
    room: tuple[str, str] | None = None  # (a class's room code, this page's token there): its runs are the room's
    residency: Residency | None = field(default=None, repr=False)  # the server's bound on built models, if any
    run_lock: RunLock = field(default_factory=RunLock, repr=False)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    compile_track: CompileTrack = field(default=None, repr=False)  # type: ignore[assignment]
    # the server's: a model of the operator's own code is captured in the session's compile worker, not here
    isolate: Callable[[str], JobRunner] | None = field(default=None, repr=False)
    _model: nn.Module | None = field(default=None, repr=False)
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)
    _done_at: float = field(default=0.0, repr=False)  # time.monotonic() when the latest run finished
    _settled: bool = field(default=True, repr=False)  # the latest run's input was submitted or left

    def __post_init__(self) -> None:
        if self.config is None:
            self.config = make_config(self.model_name)
        self.compile_track = CompileTrack(self.id)

    @property
    def model(self) -> nn.Module:
        model = self._model
        if model is None:
            model = self._model = build_model(self.model_name, self.config)
        if self.residency is not None:
            self.residency.touch(self)
        return model

    @property
    def holds_model(self) -> bool:
        """Whether the built model is in memory (an evicted one is rebuilt on the next run)."""
        return self._model is not None

    def release_model(self) -> None:
        """Drop the built model (evicted); the next run rebuilds the same weights from the config."""
        self._model = None

    def release(self) -> None:
        """The person left: keep only the light history records."""
        self._model = self.last = self.baseline = self.shown = None
        self.labs = {}
        self._forget()

    def _forget(self) -> None:
        if self.residency is not None:
            self.residency.forget(self)

    def configure(self, model_name: str, values: Mapping[str, Any] | None = None) -> bool:
        """Switch model and/or architecture; on a bad value nothing changes and the error propagates.
        Returns whether anything changed."""
        config = make_config(model_name, values)
        if model_name == self.model_name and config == self.config:
            return False
        check_architecture(model_name, config)
        self.model_name, self.config, self._model = model_name, config, None
        self._forget()
        return True

    def is_latest(self, text: str, compare: str | None = None) -> bool:
        """Whether the latest run was exactly this input on the current model and config (nothing to re-run)."""
        last = self.last
        return (last is not None and (last.model, last.config) == (self.model_name, self.config)
                and last.input.text == text and last.compare == (compare or ""))

    def fixed(self, inp: TokenizedText) -> Fixed:
        """What `inp` determines on the current model and config: from the server's cache, or captured now."""
        key = run_key(self.model_name, self.config, inp.text)
        found = FIXED.get(key)
        if found is None:
            with CAPTURING(key):
                found = FIXED.get(key)  # captured by another session while this one waited
                if found is None:
                    found = self._captured(inp)
                    FIXED.put(key, found)
        return found

    def _captured(self, inp: TokenizedText) -> Fixed:
        """The input's capture; a forward that raises is said with the graph it built up to there (ForwardRaised)."""
        if self.isolate is not None and source(self.model_name).own_code:
            job = CaptureJob(self.model_name, config_dict(self.config), inp.ids[0].tolist())
            found = next(r for r in self.isolate(self.id).run(job) if isinstance(r, Fixed | PartialGraph))
            if isinstance(found, PartialGraph):
                raise ForwardRaised(found)
            return found
        return captured_here(self.model, run_key(self.model_name, self.config, ""), inp.ids)

    def lines(self) -> LinesRan:
        """The lines of the model's Python that ran for the input on screen, and the nodes each made: recorded once
        per (model, config, text) in a pass of its own, never timed (explorer/eager/lines.py)."""
        shown = self._on_screen()
        return self._lines_of(shown.input, [n.op for n in shown.fixed.capture.graph.nodes])

    def _on_screen(self) -> Captured:
        shown = self.shown
        if shown is None or (shown.model, shown.config) != (self.model_name, self.config):
            raise InputError("no run of this model on screen: run an input first")
        return shown

    def _lines_of(self, inp: TokenizedText, ops: list[str] | None = None) -> LinesRan:
        """`inp`'s lines on the current model, from the server's cache or recorded now (`ops`: the graph to check
        the pass's nodes against, where one is drawn)."""
        key = run_key(self.model_name, self.config, inp.text)
        found = LINES.get(key)
        if found is None:
            if self.isolate is not None and source(self.model_name).own_code:
                job = LinesJob(self.model_name, config_dict(self.config), inp.ids[0].tolist(), ops)
                found = next(r for r in self.isolate(self.id).run(job) if isinstance(r, LinesRan))
            else:
                found = record_lines(self.model, inp.ids, ops)
            LINES.put(key, found)
        return found

    def costs(self) -> Costs:
        """Where the train step of the input on screen spent its time and memory, node by node: the profiler in a
        pass of its own (explorer/eager/costs.py), as many repeats as fit in GE_MAX_RUN_S (refused if none does)."""
        shown = self._on_screen()
        repeats = repeats_within(shown.fixed.capture.step_s, MAX_RUN_S, "GE_MAX_RUN_S")
        ops = [n.op for n in shown.fixed.capture.graph.nodes]
        if self.isolate is not None and source(self.model_name).own_code:
            job = CostsJob(self.model_name, config_dict(self.config), shown.input.ids[0].tolist(), ops, repeats)
            costs = next(r for r in self.isolate(self.id).run(job) if isinstance(r, Costs))
        else:
            costs = profile_costs(self.model, shown.input.ids, ops, repeats)
        self.profiled = (shown.key, costs)
        return costs

    def picked_shown(self) -> int | None:
        """The node clicked last, if it is a node of the input on screen's graph."""
        shown = self.shown
        return self.picked[1] if self.picked and shown is not None and self.picked[0] == shown.key else None

    def costs_shown(self) -> Costs | None:
        """The costs profiled last, if they are the input on screen's."""
        shown = self.shown
        return self.profiled[1] if self.profiled and shown is not None and self.profiled[0] == shown.key else None

    def branches(self) -> list[Across]:
        """Each `if`, `for` and `while` of the model's files that the input on screen or an earlier input of this
        session (on this model and architecture, the latest BRANCH_INPUTS) reached, and which way each went."""
        now = self.lines()
        shown = self.shown.input.text
        texts = list(dict.fromkeys(r.text for r in reversed(self.history) if (r.model, r.config) ==
                                   (self.model_name, self.config) and r.text and r.text != shown))[:BRANCH_INPUTS]
        inputs = [(t, self._lines_of(tokenize(t))) for t in reversed(texts)]
        return across(forks_of(now), now, inputs)

    def capture(self, text: str, compare: str | None = None, keyed: bool = False) -> Captured:
        """A run's first stage: the graph `text` builds, diffed against `compare` if given, else against the
        previous run (another input or another architecture). Fast: the view can draw it before the timings."""
        inp = tokenize(text)
        other = tokenize(compare, "comparison input") if compare and compare.strip() else None
        fixed = self.fixed(inp)
        capture = fixed.capture
        diff = None
        if other is not None:
            before = self.fixed(other).capture.graph
            diff = diff_graphs(before, capture.graph,
                               f"the comparison input ({count(other.tokens, 'token')}) -> this input "
                               f"({count(inp.tokens, 'token')})")
        typing = keyed and self.typing(compare)
        prev = self.baseline if typing else self.last
        if other is None and prev is not None:
            diff = diff_graphs(prev.capture.graph, capture.graph, _change_label(prev, self, inp))
        self.shown = Captured(self.model_name, self.config, arch_label(self.model_name, self.config), inp,
                              compare or "", fixed, diff, keyed, typing)
        return self.shown

    def typing(self, compare: str | None = None) -> bool:
        """Whether a typed run starting now follows the latest typed one without a pause, on the same model,
        architecture and comparison: the latest was then a step of someone's typing (a partial sentence), which
        the next replaces in the history and is not diffed against. A typed input stays once it was left alone for
        SETTLE_S, submitted or the box left (`settle`), or the architecture changed; any other run stays at once."""
        last = self.last
        return (last is not None and not self._settled and time.monotonic() - self._done_at < SETTLE_S
                and (last.model, last.config, last.compare) == (self.model_name, self.config, compare or ""))

    def settle(self) -> None:
        """The latest run's input is meant (Enter pressed, the box left): it stays in the history."""
        self._settled = True

    @staticmethod
    def job(c: Captured, p: Plan) -> TimingJob:
        """The timing of a captured run, as a job for the measurement pool; with the memory profile if the plan
        allows one and no session has measured it yet."""
        return TimingJob.of(c.model, config_dict(c.config), c.input.ids, p.forward_s, p.train_s, p.min_blocks,
                            profile=p.profile and c.fixed.memory is None)

    def time_run(self, c: Captured, sourced: Sourced | None = None, budget_scale: float = 1.0,
                 note: str | None = None) -> RunResult:
        """A run's second stage: its timings (measured here in this thread, within GE_MAX_RUN_S, if none are
        given); the result becomes the session's latest. `note` says how they were planned."""
        if sourced is None:
            p = plan(c.capture)
            note = p.note
            job = self.job(c, p.scaled(budget_scale))
            sourced = Sourced(next(t for t in InProcess().run(job) if isinstance(t, Timed)))
        timed, fixed = sourced.timed, c.fixed
        if timed.memory is not None:
            fixed.memory = timed.memory  # deterministic: every session running this input shares it
        result = RunResult(
            number=next(self._counter), model=c.model, config=c.config, arch=c.arch, input=c.input,
            compare=c.compare, capture=c.capture, forward=timed.forward, train_step=timed.train_step,
            params=fixed.params, param_bytes=fixed.param_bytes, diff=c.diff, memory=fixed.memory,
            timing_note=" ".join(filter(None, [note, sourced.label(),
                                               NOT_PROFILED if sourced.unprofiled and fixed.memory is None else None])
                                 ) or None, node=timed.node,
        )
        if c.typing and self.history:
            self.history.pop()  # the partial input it followed: replaced, not kept
        else:
            self.baseline = self.last  # the previous input stayed
        self.last, self._done_at, self._settled = result, time.monotonic(), not c.keyed
        self.history.append(result.record())
        return result

    def run(self, text: str, compare: str | None = None, budget_scale: float = 1.0) -> RunResult:
        """Capture the graph and time forward and train step for `text` (both stages), in this thread."""
        return self.time_run(self.capture(text, compare), budget_scale=budget_scale)

    def run_compiled(self, service: JobRunner, options: CompileOptions,
                     result: RunResult | None = None) -> Iterator[Progress | CompiledRun]:
        """Compile and time the run's input (default: the latest run) in the compile worker."""
        result = result or self.last
        if result is None:
            raise InputError("Run an input first; the compiled view compiles that input.")
        tokens = [result.input.ids[0].tolist()]
        for item in self.compile_track.run(service, result.model, config_dict(result.config), result.arch,
                                           options, tokens):
            if isinstance(item, CompiledRun):
                result.compiled = item
            yield item


def _change_label(prev: RunResult, session: Session, inp: TokenizedText) -> str:
    if prev.model != session.model_name:
        return f"previous model ({prev.model}) -> {session.model_name}"
    if prev.config != session.config:
        before, after = config_dict(prev.config), config_dict(session.config)
        changed = ", ".join(f"{k} {before[k]}->{after[k]}" for k in after if before[k] != after[k])
        return f"architecture change ({changed})"
    return f"previous input ({count(prev.tokens, 'token')}) -> this input ({count(inp.tokens, 'token')})"
