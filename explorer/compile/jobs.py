"""The Playground's compile job: compile and time a session's inputs (the job runs in the worker).

The worker keeps one compiled model between jobs. When a job comes from a different session, architecture
or option set than the last one, it resets dynamo and replays that session's earlier inputs (untimed, their
events dropped), so a session's automatic-dynamic decisions and recompile counts are those it would have
alone, in this process."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch._dynamo as dynamo

from explorer.compile.model import CompiledModel, ForwardFigures
from explorer.compile.observe import CompileEvent, Explanation
from explorer.compile.options import CompileOptions
from explorer.workers.protocol import Job, WorkerContext


def _ids(tokens: list[int]) -> torch.Tensor:
    return torch.tensor([tokens], dtype=torch.long)


@dataclass(frozen=True)
class CompiledCall:
    """One input through the compiled model: what compiled, what ran, and the figures (none if it failed)."""

    length: int
    events: list[CompileEvent]
    fallback: str | None
    error: str | None
    figures: ForwardFigures | None


@dataclass(frozen=True)
class PlaygroundReply:
    explanation: Explanation  # of the latest input whose compile dynamo did something for
    calls: list[CompiledCall]
    graph_count: int  # distinct graphs compiled for this session's model and options so far


@dataclass
class _Held:
    key: tuple
    model: CompiledModel
    explanation: Explanation | None = None
    seen: list[list[int]] = field(default_factory=list)


@dataclass(frozen=True)
class PlaygroundJob(Job[PlaygroundReply]):
    session: str
    model: str
    config: dict
    options: CompileOptions
    history: list[list[int]]  # this session's earlier inputs with this model, config and options
    inputs: list[list[int]]  # the inputs to compile and time now, in order
    source: str = ""  # the model's file as edited in the Code tab (run in the confined code worker only)

    def _key(self) -> tuple:
        return (self.session, self.model, repr(sorted(self.config.items())), self.options, self.source)

    def _switch(self, ctx: WorkerContext) -> _Held:
        dynamo.reset()
        held = _Held(self._key(), CompiledModel(self.model, self.config, self.options, self.source))
        for i, tokens in enumerate(self.history):
            ctx.phase(f"replaying this session's earlier input {i + 1}/{len(self.history)}")
            held.explanation = held.model.call(_ids(tokens)).explanation or held.explanation
            held.seen.append(tokens)
        return held

    def run(self, ctx: WorkerContext) -> PlaygroundReply:
        held = ctx.held
        if not isinstance(held, _Held) or held.key != self._key() or held.seen != self.history:
            held = ctx.held = self._switch(ctx)
        cm = held.model
        calls = []
        for tokens in self.inputs:
            ids = _ids(tokens)
            ctx.phase(f"compiling for {len(tokens)} tokens")
            outcome = cm.call(ids)
            held.explanation = outcome.explanation or held.explanation
            held.seen.append(tokens)
            figures = None
            if outcome.error is None:
                ctx.phase(f"timing eager and compiled at {len(tokens)} tokens")
                figures = cm.measure(ids)
            calls.append(CompiledCall(outcome.length, outcome.events, outcome.fallback,
                                      outcome.error, figures))
        assert held.explanation is not None  # a session's first input always compiles (or fails, or is skipped)
        return PlaygroundReply(held.explanation, calls, len({e.compile_id for e in cm.events}))
