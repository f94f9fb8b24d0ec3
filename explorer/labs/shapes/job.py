"""The shapes lab's job, in a worker of its own: compile the model at the first lengths, read the graphs dynamo
cached, predict every request from their guards (nothing runs), then run the requests and record what dynamo did."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch._dynamo as dynamo
from torch._dynamo.decorators import mark_unbacked
from torch.fx.experimental import _config as shape_config

from explorer.compile.model import CallOutcome, CompiledModel
from explorer.compile.observe import GraphBreak
from explorer.compile.options import CompileOptions
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.core.limits import MAX_TOKENS, RECOMPILE_LIMIT
from explorer.labs.shapes.checked import Check, with_check
from explorer.labs.shapes.exported import Exported, export_length
from explorer.labs.shapes.guards import CachedGraph, entries, failing, frame_locals, frame_of, read
from explorer.labs.shapes.predict import FROM_THE_START, STANCES, Outcome, Prediction, predict
from explorer.labs.shapes.results import Request, ShapesResult
from explorer.labs.shapes.symbols import Traced, read_symbols, traced
from explorer.workers.protocol import Job, WorkerContext
from models.tokenizer import encode

SCALAR_OUTPUTS = "capture_scalar_outputs"  # .item() kept in the graph (an unbacked symbol) instead of a break
OUTPUT_SHAPES = "capture_dynamic_output_shape_ops"  # nonzero and its kin kept in the graph (an unbacked size)


_REFUSED = "Detected recompile when torch.compile stance is 'fail_on_recompile'"  # (dynamo's words)
_VIOLATED = "ConstraintViolation"  # a compile the length's mark_dynamic (its range, or 0/1) contradicts


def ids_of(length: int, unbacked: bool = False, batch: int = 1) -> torch.Tensor:
    """The input at `length`, `batch` rows of the same sentence; `unbacked`: its length marked unbacked
    (torch._dynamo.decorators.mark_unbacked), a size dynamo traces without a value, so that no guard can specialize
    it (0 and 1 included)."""
    ids = torch.tensor([encode(text_of_length(DEFAULT_TEXT, length))] * batch, dtype=torch.long)
    if unbacked:
        mark_unbacked(ids, 1)
    return ids


def _graph(entry: Any, name: str, seen: dict[str, Traced]) -> CachedGraph:
    """A cached graph as its guards say, with what each dimension became where it was traced."""
    graph = read(entry, name)
    t = seen.get(graph.compile_id)
    return graph if t is None else replace(graph, symbols=read_symbols(t, name, graph.dims, os.getcwd()))


@dataclass(frozen=True)
class ShapesJob(Job[ShapesResult]):
    model: str
    values: dict[str, Any]
    options: CompileOptions
    compiled_at: tuple[int, ...]
    requests: tuple[int, ...]
    switches: tuple[str, ...]  # dynamo's config switches turned on (SCALAR_OUTPUTS, OUTPUT_SHAPES)
    unbacked: bool = False  # the length marked unbacked before every call
    stance: str = "default"  # torch.compiler.set_stance while the requests run (STANCES)
    export: bool = False  # also torch.export the model with its length a Dim (exported.py)
    batch: int = 1  # rows of every input: a batch equal to a length makes two sizes meet (duck sizing)
    duck: bool = True  # torch.fx.experimental._config.use_duck_shape: sizes equal when traced share one symbol
    check: Check | None = None  # a torch._check inserted at a line of the forward (checked.py)
    source: str = ""  # the model's file as edited in the Code tab (run in the confined code worker only)

    def setting(self) -> str:
        return ", ".join([self.options.label(), *(f"{s}=True" for s in self.switches),
                          *(["mark_unbacked on the length"] if self.unbacked else []),
                          *([f"batch {self.batch}"] if self.batch > 1 else []),
                          *([] if self.duck else ["use_duck_shape=False"]),
                          *([self.check.said()] if self.check else []),
                          *([f"stance {self.stance}" + ("" if self.stance in FROM_THE_START else " for the requests")]
                            if self.stance != "default" else [])])

    def _called(self, cm: CompiledModel, length: int, what: str, request: bool = True) -> CallOutcome:
        """The compiled model called at `length`; a call that failed (the model, or its compile: any failure of the
        first compiles, a request's other than the settings predict) ends the run, named: counted as reused or
        eager, it would pass for a prediction that held."""
        outcome = cm.call(self._ids(length))
        if outcome.error and (not request or self._failed(outcome.error) is None):
            raise RuntimeError(f"{what} at {length} tokens failed: {outcome.error}")
        return outcome

    def _failed(self, error: str) -> Outcome | None:
        """A request's failure the settings predict: the stance's refusal, or mark_dynamic's range contradicted;
        None for any other (the model's, or its compile's)."""
        if self.stance == "fail_on_recompile" and _REFUSED in error:
            return Outcome.REFUSED
        if self.options.mark_dynamic and _VIOLATED in error:
            return Outcome.OUTSIDE
        return None

    def _in_range(self, length: int) -> bool:
        """Whether mark_dynamic's range holds the length (a marked size is never 0 or 1: 0/1 specialization)."""
        o = self.options
        return not o.mark_dynamic or (length >= 2 and (o.mark_min is None or length >= o.mark_min)
                                      and (o.mark_max is None or length <= o.mark_max))

    def _ids(self, length: int) -> torch.Tensor:
        return ids_of(length, self.unbacked, self.batch)

    def run(self, ctx: WorkerContext) -> ShapesResult:
        dynamo.reset()  # the prediction reads this model's graphs only
        with dynamo.config.patch(**dict.fromkeys(self.switches, True)), shape_config.patch(use_duck_shape=self.duck):
            seen: dict[str, Traced] = {}  # compile id: the graph as the backend got it (`name`, read below, is set
            # before the first call compiles anything)
            cm = CompiledModel(self.model, self.values, self.options, self.source,
                               on_graph=lambda cid, gm, inputs: seen.setdefault(cid, traced(gm, inputs, name)))
            if self.check is not None:
                with_check(cm.model, self.check)  # before the first call: dynamo traces the checked forward
            fn = frame_of(cm.model)
            name = [p for p in frame_locals(fn, cm.model, ids_of(2))][1]  # the argument after self
            breaks: list[GraphBreak] = []
            skipped = ""
            with torch.compiler.set_stance(self.stance if self.stance in FROM_THE_START else "default"):
                for n in self.compiled_at:
                    ctx.phase(f"compiling at {n} tokens")
                    outcome = self._called(cm, n, "the compile", request=False)
                    if outcome.explanation is not None:
                        breaks += [b for b in outcome.explanation.graph_breaks if b not in breaks]
                        if outcome.explanation.skipped:
                            skipped = outcome.explanation.skipped_said()
            cached = entries(fn)
            ctx.phase(f"predicting {len(self.requests)} requests from {len(cached)} cached graph(s)")
            start = time.perf_counter()
            if not cached:  # the forward runs eagerly: dynamo gave it up, or compiles only frames inside it
                why = skipped or "dynamo compiled no graph of the forward itself (only of frames inside it)"
                predictions = [Prediction(n, Outcome.SKIPPED, "", why) for n in self.requests]
            else:
                predictions = predict(self.requests, lambda n: self._guarded(cm, fn, cached, n),
                                      int(RECOMPILE_LIMIT), instead=STANCES[self.stance], marked=self._in_range)
            predict_s = time.perf_counter() - start
            frame = str(cached[0].compile_id).split("/")[0] if cached else None
            requests = []
            with torch.compiler.set_stance(self.stance):
                for i, (n, p) in enumerate(zip(self.requests, predictions, strict=True), 1):
                    if i % 20 == 1:
                        ctx.phase(f"running request {i} of {len(self.requests)} ({n} tokens)")
                    outcome = self._called(cm, n, f"request {i}")
                    made = [e.compile_id for e in outcome.events if e.compile_id.split("/")[0] == frame]
                    failed = self._failed(outcome.error) if outcome.error else None  # (_called let only these by)
                    did = failed if failed is not None else self._did(cm, fn, made, n)
                    requests.append(Request(p, did, made[0] if made else "", len(outcome.events) - len(made)))
        graphs = tuple(_graph(e, name, seen) for e in cached)
        exported: tuple[Exported, ...] = ()
        if self.export:
            ctx.phase("exporting with the length dynamic")
            specialized = next((d for g in graphs for d in g.symbols.dimensions
                                if d.index == 1 and d.became == "specialized"), None)
            exported = export_length(cm.model, self._ids(max(2, self.compiled_at[0])), 2, int(MAX_TOKENS),
                                     specialized)
        return ShapesResult(self.model, dict(self.values), self.setting(), self.compiled_at, name, graphs, skipped,
                            tuple(breaks), tuple(requests), predict_s, int(RECOMPILE_LIMIT), exported,
                            self.stance)

    def _did(self, cm: CompiledModel, fn: Any, made: list[str], length: int) -> Outcome:
        """What dynamo did with the forward's frame for this request: compiled a graph (a compile event of that
        frame), else ran a graph whose guards accept it (dynamo's own dispatch), else ran it eagerly."""
        if made:
            return Outcome.COMPILES
        now = entries(fn)
        if not now:
            return Outcome.SKIPPED
        if any(f is None for _, f in self._guarded(cm, fn, now, length)):
            return Outcome.REUSES
        return STANCES[self.stance] or Outcome.EAGER

    def _guarded(self, cm: CompiledModel, fn: Any, cached: list[Any], length: int) -> list[tuple[str, str | None]]:
        """Each cached graph's compile id with the guard it fails at `length` (None: it accepts it)."""
        ids = self._ids(length)
        if self.options.mark_dynamic:  # as the call marks it: its guards check the mark
            dynamo.mark_dynamic(ids, 1, min=self.options.mark_min, max=self.options.mark_max)
        f_locals = frame_locals(fn, cm.model, ids)
        with torch.no_grad():  # as the call runs: its graphs guard on the grad mode too
            return [(str(e.compile_id), failing(e, f_locals)) for e in cached]
