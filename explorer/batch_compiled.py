"""One batching strategy under torch.compile; runs in the compile worker (dynamo's state is global)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch._dynamo as dynamo
from torch import nn

from explorer.batches import token_ids
from explorer.batching import CompiledStrategy, LabResult, Prepared, prepare, timed
from explorer.capture import train_loss
from explorer.compiled import CountingBackend, require_backend
from explorer.errors import one_line
from explorer.worker import CompileFailure, CompileService, Progress
from models import build_model, make_config


def _first_run(fn: Callable[[], Any]) -> tuple[float, str | None, str | None]:
    """Time the call that compiles; (seconds, fallback, error)."""
    start = time.perf_counter()
    try:
        with dynamo.config.patch(fail_on_recompile_limit_hit=True):
            fn()
    except dynamo.exc.FailOnRecompileLimitHit:
        return time.perf_counter() - start, (
            f"recompile limit ({dynamo.config.recompile_limit}) hit: this strategy feeds more distinct shapes "
            "than dynamo compiles; it would silently run eagerly from there on"), None
    except Exception as e:  # a failed compile is a result to show
        return time.perf_counter() - start, None, one_line(e)
    return time.perf_counter() - start, None, None


def _break_reason(raw: str) -> str:
    """Dynamo's graph-break message in one line: what happened and its explanation."""
    lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    explanation = next((ln.removeprefix("Explanation: ") for ln in lines if ln.startswith("Explanation:")), "")
    text = f"{lines[0]}: {explanation}" if explanation else lines[0]
    return re.sub(r"[^\s`]*site-packages/", "", text)


def compile_strategy(model: nn.Module, texts: list[str], name: str, bucket_width: int, backend: str,
                     budget_scale: float = 1.0, phase: Callable[[str], None] = lambda _: None) -> CompiledStrategy:
    """Compile `model` fresh, run the strategy's forward and train step through it, and time both."""
    prep: Prepared = prepare(model, name, token_ids(texts), bucket_width)
    dynamo.reset()  # a clean slate: this strategy's compiles only
    breaks_before = dict(dynamo.utils.counters["graph_break"])  # counters outlive reset()
    counter = CountingBackend(backend)
    compiled = torch.compile(prep.module, backend=counter, dynamic=None)
    result = CompiledStrategy(backend)

    def forward() -> torch.Tensor:
        with torch.no_grad():
            return prep.run(compiled)

    def step() -> None:
        train_loss(prep.run(compiled)).backward()

    phase(f"compiling the forward for {len(prep.shapes)} input shape(s)")
    result.compile_s, result.fallback, result.error = _first_run(forward)
    if result.fallback is None and result.error is None:
        phase("compiling the train step (forward and backward graphs)")
        result.train_compile_s, result.fallback, result.error = _first_run(step)
    result.compiles = counter.graphs
    result.graph_breaks = sorted({_break_reason(r) for r, n in dynamo.utils.counters["graph_break"].items()
                                  if n > breaks_before.get(r, 0)})
    if result.fallback or result.error:
        return result
    calls = counter.calls
    with torch.no_grad():
        result.max_abs_diff = float((forward() - prep.run()).abs().max())
    if counter.calls == calls:
        result.fallback = "no compiled graph ran: dynamo skipped this code (e.g. nn.GRU/nn.LSTM) and ran it eagerly"
        return result
    phase("timing the compiled forward and train step")
    result.forward, result.train_step, result.note = timed(prep, compiled, f"compiled {name}", budget_scale)
    return result


def batch_job(job: dict[str, Any], phase: Callable[[str], None]) -> dict[str, Any]:
    """The worker's side of a batching-lab compile job (see worker.CompileService)."""
    model = build_model(job["model"], make_config(job["model"], job["config"]))
    return compile_strategy(model, job["texts"], job["strategy"], job["bucket_width"], job["backend"],
                            job.get("budget_scale", 1.0), phase).as_dict()


def compile_lab(service: CompileService, lab: LabResult, model: str, config: dict[str, Any], texts: list[str],
                bucket_width: int, backend: str, budget_scale: float = 1.0) -> Iterator[Progress]:
    """Compile and time each supported strategy in the worker, one job each (a timeout costs one strategy);
    fills in `compiled` on the lab's strategies and yields progress meanwhile."""
    require_backend(backend)
    supported = [s for s in lab.strategies if s.supported]
    for i, strategy in enumerate(supported, 1):
        job = {"kind": "batch", "model": model, "config": config, "texts": texts, "strategy": strategy.name,
               "bucket_width": bucket_width, "backend": backend, "budget_scale": budget_scale}
        try:
            for item in service.run(job):
                if isinstance(item, Progress):
                    yield Progress(item.elapsed_s, f"{strategy.title} ({i}/{len(supported)}), {backend}: {item.phase}")
                else:
                    strategy.compiled = CompiledStrategy.from_dict(item)
        except CompileFailure as e:
            strategy.compiled = CompiledStrategy(backend, error=str(e))
