"""The batching lab: one batch of sentences run with every batching strategy on the chosen model, each checked
against the per-sample loop, timed (eagerly, and compiled if asked), counted and profiled."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass

from explorer.compile.options import BACKENDS
from explorer.core.batches import DISTRIBUTIONS, batch_from_lines, generate_batch
from explorer.core.limits import MAX_BATCH, MAX_TEXT_CHARS, MAX_TOKENS
from explorer.core.progress import Progress
from explorer.core.queues import Queue
from explorer.labs.batching.lab import compile_lab, eager_lab
from explorer.labs.batching.results import LabRun
from explorer.labs.batching.view import OUTPUTS, BatchOutcome, format_lab, view_of
from explorer.labs.contract import LabContext, LabSpec, Needs, Work
from explorer.serving.queueing import Turn, queued
from explorer.sources.contract import Subject
from models.config import knob


@dataclass(frozen=True)
class BatchParams:
    lines: str = knob("", "your sentences, one per line (empty: N generated ones, below)", most=MAX_TEXT_CHARS,
                      file=True)
    n: int = knob(64, "number of sentences generated", min=1, max=MAX_BATCH)
    distribution: str = knob("zipf", "their lengths (zipf: many short, a few very long)", choices=DISTRIBUTIONS,
                             flag="--lengths-from")
    min_len: int = knob(5, "the shortest generated sentence, in tokens", min=1, max=MAX_TOKENS)
    max_len: int = knob(300, "the longest generated sentence, in tokens", min=1, max=MAX_TOKENS)
    seed: int = knob(0, "seed of the generated sentences", min=0, max=2**31 - 1)
    bucket_width: int = knob(32, "sentences whose lengths fall in the same range share a padded batch", min=1,
                             max=MAX_TOKENS)
    backend: str = knob("", "also compile each strategy with this backend, in the worker (empty: eager only)",
                        choices=("", *BACKENDS), switch="--compile")


def texts_of(p: BatchParams) -> list[str]:
    """The batch: the typed lines, or N generated sentences."""
    if p.lines.strip():
        return batch_from_lines(p.lines)
    return generate_batch(p.n, p.distribution, p.min_len, p.max_len, p.seed)


def run(subject: Subject | None, p: BatchParams, ctx: LabContext) -> Iterator[Progress | BatchOutcome]:
    """Every strategy eagerly in this process, in its turn of the measurement queue, then (with a backend) each one
    compiled in the compile worker: progress, the eager outcome, then the compiled one."""
    assert subject is not None, "the batching lab needs a model"
    texts = texts_of(p)

    def work(turn: Turn) -> Generator[Progress, None, tuple[LabRun, str | None]]:
        lab_run = None
        for item in eager_lab(subject, texts, p.bucket_width, turn.budget_scale):
            if isinstance(item, LabRun):
                lab_run = item
            else:
                yield item
        assert lab_run is not None
        return lab_run, turn.notice()

    lab_run, notice = yield from queued(work)  # the figures are drawn after the turn, off the measuring core's time
    yield BatchOutcome(lab_run, notice)
    if p.backend:
        for step in compile_lab(ctx.workers.compile, lab_run, p.backend):
            yield Progress(step.elapsed_s, f"Compiled: {step.phase}")
        yield BatchOutcome(lab_run, notice, p.backend)


def refuses(subject: Subject) -> str | None:
    if subject.source.supports.batched:
        return None
    return (f"the batching lab runs padded batches and compares one output row per sentence: {subject.model}'s "
            "forward must take `forward(ids, lengths=None)` (ids (batch, longest), each sentence's length) and "
            "return (batch, classes). Three lines do it, e.g. for a per-token output `out` (batch, tokens, "
            "classes): `def forward(self, ids, lengths=None):` ... `last = lengths - 1 if lengths is not None else "
            "torch.full((len(ids),), ids.shape[1] - 1)` ... `return out[torch.arange(len(ids)), last]`; or, for a "
            "model whose inputs are not the ids, define `batch_inputs(ids, lengths)` beside its factory")


def work(p: BatchParams) -> Work:
    """Every strategy runs the whole batch; padding it to its longest sentence is the most any of them does."""
    texts = texts_of(p)
    longest = max((len(t.encode()) for t in texts), default=0)
    return Work(len(texts) * longest, f"{len(texts)} sentences x {longest} tokens (padded)", "max_batch_tokens")


SPEC = LabSpec(
    name="batch", title="Batching lab", summary="run a batch of sentences with every batching strategy",
    intro="Sentences have different lengths. A dynamic graph can run each one as it is; a batch needs them padded "
          "to one shape, or sorted into buckets, or packed. This lab runs **the Playground's current model and "
          "architecture** on one batch with each strategy, checks every strategy's outputs against the per-sample "
          "loop, and measures time, memory and wasted work. Change the model in the Playground tab.",
    button="Run the lab", params=BatchParams, needs=Needs.MODEL, run=run, view=view_of, outputs=OUTPUTS,
    text=format_lab, queue=Queue.MEASURE, work=work, refuses=refuses)
