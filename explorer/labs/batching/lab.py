"""Running the batching lab: every strategy eagerly here (checked against the loop, counted, timed), and
each one compiled as a job in the compile worker."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from explorer.compile.options import require_backend
from explorer.core.batches import token_ids
from explorer.core.budget import over_memory_note
from explorer.core.errors import InputError
from explorer.core.limits import FORWARD_BUDGET_S
from explorer.core.progress import Progress
from explorer.eager.compare import interleaved
from explorer.eager.memory import MemoryProfile
from explorer.labs.batching.compiled import BatchJob
from explorer.labs.batching.results import CompiledStrategy, LabResult, LabRun, StrategyResult
from explorer.labs.batching.strategies import STRATEGIES, Unsupported, prepare
from explorer.labs.batching.timed import no_grad, train_step
from explorer.sources.contract import Subject
from explorer.workers.protocol import JobRunner, WorkerFailure
from models.config import config_dict


def _flops(fn: Callable[[], torch.Tensor]) -> int:
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        fn()
    return counter.get_total_flops()


def iter_lab(model: nn.Module, texts: list[str], bucket_width: int = 32,
             budget_scale: float = 1.0) -> Iterator[Progress | LabResult]:
    """Run every strategy on `texts` eagerly; each is checked against the loop, counted and its train step timed,
    then every forward is timed round-robin (any two of them pair up). Yields each step's title before it runs (as
    progress), then the LabResult."""
    seqs = token_ids(texts)
    prepare(model, "loop", seqs, bucket_width)  # validates the width before any work
    tokens = sum(map(len, seqs))
    by_name: dict[str, StrategyResult] = {}
    forwards: dict[str, Callable[[], None]] = {}  # timed together at the end, so any two pair up
    reference: torch.Tensor | None = None
    for name in ["loop", *[k for k in STRATEGIES if k != "loop"]]:  # the loop first: it is the reference
        title = STRATEGIES[name][0]
        yield Progress.said(title)
        try:
            prep = prepare(model, name, seqs, bucket_width)
            note = over_memory_note(prep.activation_bytes(model))
            if note and name == "loop":
                raise InputError(f"This batch is too big: {note}. Use fewer or shorter sentences.")
            if note:
                raise Unsupported(note)
        except Unsupported as e:
            by_name[name] = StrategyResult(name, title, False, str(e))
            continue
        with torch.no_grad():
            out = prep.run()
        reference = out if reference is None else reference
        res = StrategyResult(name, title, True, padding_fraction=1 - tokens / prep.computed_positions,
                             max_abs_diff=float((out - reference).abs().max()), distinct_shapes=len(prep.shapes))
        notes = []
        try:
            res.flops_total = _flops(prep.run)
            res.flops_useful = by_name["loop"].flops_total if "loop" in by_name else res.flops_total
        except Exception as e:  # FlopCounterMode does not dispatch every tensor subclass (jagged ones)
            notes.append(f"FLOPs not counted: FlopCounterMode fails here ({type(e).__name__})")
        res.train_step, step_note = train_step(prep, prep.module, name, budget_scale)
        res.note = "; ".join([*notes, *filter(None, [step_note])])
        with MemoryProfile() as mem, torch.no_grad():
            prep.run()
        res.peak_bytes = mem.peak()
        by_name[name], forwards[name] = res, no_grad(prep.run)
    yield Progress.said(f"the {len(forwards)} forwards, interleaved round by round")
    rounds = interleaved(forwards, FORWARD_BUDGET_S * budget_scale * len(forwards))
    for name, res in by_name.items():
        if name in forwards:
            res.forward = rounds.measurement(name)
            res.tokens_per_s = tokens / (res.forward.median_ms / 1e3)
    yield LabResult([len(s) for s in seqs], [by_name[k] for k in STRATEGIES], rounds)


def eager_lab(subject: Subject, texts: list[str], bucket_width: int = 32,
              budget_scale: float = 1.0) -> Iterator[Progress | LabRun]:
    """The lab run on `subject`'s model, here in this thread: progress per strategy, then the run."""
    start = time.monotonic()
    for item in iter_lab(subject.build(), texts, bucket_width, budget_scale):
        if isinstance(item, LabResult):
            yield LabRun(texts, bucket_width, item, subject.model, subject.config)
        else:
            elapsed = time.monotonic() - start
            yield Progress(elapsed, f"Eager: timing *{item.phase}*")


def lab_result(model: nn.Module, texts: list[str], bucket_width: int = 32, budget_scale: float = 1.0) -> LabResult:
    *_, result = iter_lab(model, texts, bucket_width, budget_scale)
    return result  # type: ignore[return-value]


def compile_lab(service: JobRunner, run: LabRun, backend: str, budget_scale: float = 1.0) -> Iterator[Progress]:
    """Compile and time each supported strategy of a lab run in the worker, one job each (a timeout costs one
    strategy); fills in `compiled` on the run's strategies and yields progress meanwhile."""
    require_backend(backend)
    supported = [s for s in run.result.strategies if s.supported]
    config = config_dict(run.config)
    for i, strategy in enumerate(supported, 1):
        job = BatchJob(run.model, config, run.texts, strategy.name, run.bucket_width, backend, budget_scale)
        try:
            for item in service.run(job):
                if isinstance(item, Progress):
                    yield Progress(item.elapsed_s, f"{strategy.title} ({i}/{len(supported)}), {backend}: {item.phase}")
                else:
                    strategy.compiled = item
        except WorkerFailure as e:
            strategy.compiled = CompiledStrategy(backend, error=str(e))
