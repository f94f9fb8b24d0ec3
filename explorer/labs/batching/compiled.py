"""One batching strategy under torch.compile: the job the lab sends to the compile worker, and what the
worker does with it (dynamo's state is process-global, so each strategy compiles fresh there)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch._dynamo as dynamo
from torch import nn

from explorer.compile.observe import BreakLog, CountingBackend, frame_compiles, run_guarded, skip_cause
from explorer.core.batches import token_ids
from explorer.core.limits import FORWARD_BUDGET_S
from explorer.eager.capture import train_loss
from explorer.eager.compare import compare
from explorer.labs.batching.results import CompiledStrategy
from explorer.labs.batching.strategies import prepare
from explorer.labs.batching.timed import no_grad, train_step
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Job, WorkerContext


def compile_strategy(model: nn.Module, texts: list[str], name: str, bucket_width: int, backend: str,
                     budget_scale: float = 1.0, phase: Callable[[str], None] = lambda _: None) -> CompiledStrategy:
    """Compile `model` fresh, run the strategy's forward and train step through it, and time both."""
    prep = prepare(model, name, token_ids(texts), bucket_width)
    dynamo.reset()  # a clean slate: this strategy's compiles only
    counter = CountingBackend(backend)
    compiled = torch.compile(prep.module, backend=counter, dynamic=None)
    result = CompiledStrategy(backend)

    def forward() -> torch.Tensor:
        with torch.no_grad():
            return prep.run(compiled)

    def step() -> None:
        prep.module.zero_grad(set_to_none=True)
        train_loss(prep.run(compiled)).backward()

    with BreakLog() as breaks:
        phase(f"compiling the forward for {len(prep.shapes)} input shape(s)")
        since = time.time()
        ran = run_guarded(forward, counter, f" (this strategy feeds {len(prep.shapes)} input shapes)")
        result.compile_s = sum(f.seconds for f in frame_compiles(since))  # dynamo's own figures
        if ran.compiled:
            phase("compiling the train step (forward and backward graphs)")
            since = time.time()
            ran = run_guarded(step, counter, " in the train step")
            result.train_compile_s = sum(f.seconds for f in frame_compiles(since))
    result.compiles = counter.graphs
    result.graph_breaks = [b.one_line() for b in breaks.breaks]
    result.fallback, result.error = ran.fallback, ran.error
    if result.fallback and (why := skip_cause(breaks.breaks)):
        result.fallback += f" (why: {why})"
    if not ran.compiled:
        return result
    with torch.no_grad():
        result.max_abs_diff = float((forward() - prep.run()).abs().max())
    phase("timing the forward eagerly and compiled in interleaved pairs, then the compiled train step")
    result.comparison = compare("eager", no_grad(prep.run), "compiled", forward, 2 * FORWARD_BUDGET_S * budget_scale)
    result.eager_forward, result.forward = (result.comparison.measurement(k) for k in ("eager", "compiled"))
    result.train_step, result.note = train_step(prep, compiled, f"compiled {name}", budget_scale)
    return result


@dataclass(frozen=True)
class BatchJob(Job[CompiledStrategy]):
    model: str
    config: dict
    texts: list[str]
    strategy: str
    bucket_width: int
    backend: str
    budget_scale: float = 1.0

    def run(self, ctx: WorkerContext) -> CompiledStrategy:
        ctx.held = None  # the strategy resets dynamo: the Playground's compiled model must be rebuilt
        model = build_model(self.model, make_config(self.model, self.config))
        return compile_strategy(model, self.texts, self.strategy, self.bucket_width, self.backend,
                                self.budget_scale, ctx.phase)
