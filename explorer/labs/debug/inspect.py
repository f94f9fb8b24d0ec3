"""An inspection eager mode allows: a forward hook that records a hidden state's norm at every call (every
token, for the RNN's cell), run eagerly, then the same hook under torch.compile, in the compile worker: what
dynamo does with it (graph breaks), and whether the recorded values are still there and still the same."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch._dynamo as dynamo
from torch import nn

from explorer.compile.observe import BreakLog, CountingBackend, message_line, user_line
from explorer.sources.edited import model_of
from explorer.workers.protocol import Job, WorkerContext
from models.bugs import embedding_path

WATCHED = {"rnn": "layers.0.fwd", "transformer": "blocks.0", "early_exit": "blocks.0", "tree": "compose"}


def watched(model_name: str, model: nn.Module) -> str:
    """The module the hook watches: a zoo model's first block, else (a user's or a library model) its embeddings."""
    return WATCHED.get(model_name) or embedding_path(model) or ""


@dataclass
class Recording:
    mode: str
    module: str
    norms: list[float] = field(default_factory=list)  # one per hidden state (per token for the RNN's cell)
    calls: int = 0  # hook calls
    graph_breaks: list[str] = field(default_factory=list)
    graphs: int = 0
    seconds: float = 0.0
    max_abs_diff_vs_eager: float | None = None
    error: str = ""  # the compiled forward failed (a hook inside a scan or cond dynamo cannot capture): why

    def said(self) -> str:
        if self.error:
            return f"{self.mode}: failed: {self.error}"
        return f"{self.mode}: {len(self.norms)} values, {self.graphs} graph(s), {len(self.graph_breaks)} break(s)"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"said": self.said()}


def _record(model: nn.Module, name: str, rec: Recording) -> Any:
    def hook(module: nn.Module, args: tuple, out: Any) -> None:
        state = out[0] if isinstance(out, tuple) else out
        rec.calls += 1
        rec.norms += state.detach().norm(dim=-1).flatten().tolist()  # a Python value per hidden state
    return model.get_submodule(name).register_forward_hook(hook)


def record(model_name: str, config: dict, tokens: list[int], backend: str | None = None, source: str = ""
           ) -> Recording:
    """The norms the hook saw in one forward: eagerly, or compiled with `backend` (`source`: the model's file as
    edited in the Code tab)."""
    model = model_of(model_name, config, source)
    name = watched(model_name, model)
    rec = Recording("eager" if backend is None else f"compiled ({backend})", name)
    handle = _record(model, name, rec)
    ids = torch.tensor([tokens], dtype=torch.long)
    start = time.perf_counter()
    try:
        if backend is None:
            with torch.no_grad():
                model(ids)
        else:
            dynamo.reset()
            counter = CountingBackend(backend)
            try:
                with BreakLog() as breaks, torch.no_grad():
                    torch.compile(model, backend=counter)(ids)
            except Exception as e:  # a finding to show (a scan's body with a hook in it), not a fault
                rec.error = f"{type(e).__name__}: {message_line(e)[:200]}{user_line(e)}"
                rec.norms = []
            rec.graph_breaks, rec.graphs = [b.one_line() for b in breaks.breaks], counter.graphs
            dynamo.reset()
    finally:
        handle.remove()
    rec.seconds = time.perf_counter() - start
    return rec


@dataclass(frozen=True)
class InspectJob(Job[Recording]):
    model: str
    config: dict
    tokens: list[int]
    backend: str
    source: str = ""  # the model's file as edited in the Code tab (run in the confined code worker only)

    def run(self, ctx: WorkerContext) -> Recording:
        ctx.held = None
        ctx.phase(f"compiling the model with a recording hook ({self.backend})")
        return record(self.model, self.config, self.tokens, self.backend, self.source)


def compared(eager: Recording, compiled: Recording) -> Recording:
    """The compiled recording, with how far its values are from eager's (None if the counts differ)."""
    if len(compiled.norms) == len(eager.norms) and eager.norms:
        compiled.max_abs_diff_vs_eager = max(abs(a - b) for a, b in zip(eager.norms, compiled.norms, strict=True))
    return compiled
