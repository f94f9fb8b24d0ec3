"""The variable-length batching lab: the same model and sentences under each batching strategy.

Every strategy returns one row of logits per sentence, in the batch's order, so each can be checked
against the plain per-sample loop (define-by-run at its plainest, and the reference).
"""

from __future__ import annotations

import inspect
import os
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.flop_counter import FlopCounterMode

from explorer.batches import token_ids
from explorer.budget import batch_activation_bytes, over_memory_note
from explorer.capture import train_loss
from explorer.errors import InputError, one_line
from explorer.limits import FORWARD_BUDGET_S, MAX_TOKENS, TRAIN_BUDGET_S
from explorer.memory import MemoryProfile
from explorer.timing import Measurement, measure
from models.rnn import UnrolledRNN

AGREE_TOL = 1e-4


class Unsupported(Exception):
    """This strategy does not apply to this model (the message says why)."""


@dataclass
class Prepared:
    """A strategy's plan: call `module` once per argument tuple, concatenate, restore the batch order."""

    module: nn.Module
    calls: list[tuple[torch.Tensor, ...]]
    computed_positions: int  # token positions the model computes, pads included
    order: torch.Tensor | None = None  # index that puts the concatenated rows back in batch order

    @property
    def shapes(self) -> set[tuple]:  # distinct input shapes fed to the model (= compiles of a static graph)
        return {("jagged", len(a[0].unbind())) if a[0].is_nested else tuple(a[0].shape) for a in self.calls}

    def activation_bytes(self, model: nn.Module) -> int:
        """Estimated bytes a train step over all calls saves for backward (a jagged batch: each sentence
        as its own unpadded row)."""
        shapes = [(1, len(t)) for a in self.calls if a[0].is_nested for t in a[0].unbind()]
        shapes += [tuple(a[0].shape) for a in self.calls if not a[0].is_nested]
        return batch_activation_bytes(model, shapes)

    def run(self, fn: Callable[..., torch.Tensor] | None = None) -> torch.Tensor:
        fn = self.module if fn is None else fn
        out = torch.cat([fn(*args) for args in self.calls])
        return out if self.order is None else out[self.order]


def _pad(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in seqs])
    out = torch.zeros(len(seqs), int(lengths.max()), dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out, lengths


def _batched(model: nn.Module) -> None:
    if "lengths" not in inspect.signature(model.forward).parameters:
        raise Unsupported("this model has no padded form: each sentence has its own structure (e.g. its own tree)")


def loop(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    return Prepared(model, [(torch.tensor([s]),) for s in seqs], sum(map(len, seqs)))


def pad(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    _batched(model)
    ids, lengths = _pad(seqs)
    return Prepared(model, [(ids, lengths)], ids.numel())


def bucket(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    """Sort into buckets of `width` tokens of length, pad within each bucket."""
    _batched(model)
    buckets: dict[int, list[int]] = {}
    for i, s in enumerate(seqs):
        buckets.setdefault((len(s) - 1) // width, []).append(i)
    groups = [buckets[k] for k in sorted(buckets)]
    calls = [_pad([seqs[i] for i in idx]) for idx in groups]
    order = torch.tensor([i for idx in groups for i in idx]).argsort()
    return Prepared(model, calls, sum(ids.numel() for ids, _ in calls), order)


class PackedRNN(nn.Module):
    """The zoo RNN's embedding and head around an nn.RNN/GRU/LSTM carrying exactly its cells' weights."""

    def __init__(self, model: UnrolledRNN):
        super().__init__()
        cfg = model.cfg
        kind = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[cfg.cell]
        self.embed, self.head, self.dirs = model.embed, model.head, 2 if cfg.bidirectional else 1
        self.rnn = kind(cfg.embed, cfg.hidden, num_layers=cfg.layers, bidirectional=cfg.bidirectional,
                        batch_first=True)
        with torch.no_grad():  # same gate layout as the cells: copy weights one to one
            for layer, cells in enumerate(model.layers):
                for direction, cell in cells.items():
                    suffix = f"_l{layer}" + ("_reverse" if direction == "bwd" else "")
                    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                        getattr(self.rnn, name + suffix).copy_(getattr(cell, name))

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(self.embed(ids), lengths, batch_first=True, enforce_sorted=False)
        _, h = self.rnn(packed)
        h = h[0] if isinstance(h, tuple) else h
        return self.head(torch.cat(list(h[-self.dirs:]), dim=-1))


def pack(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    if not isinstance(model, UnrolledRNN):
        raise Unsupported("pack_padded_sequence feeds nn.RNN/GRU/LSTM modules: recurrent models only")
    ids, lengths = _pad(seqs)
    return Prepared(PackedRNN(model), [(ids, lengths)], sum(map(len, seqs)))


def _where(e: BaseException) -> str:
    """The innermost frame of the model's own code in a traceback, as 'models/x.py:N'."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f"{os.sep}models{os.sep}" in f.filename]
    return f"models/{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else "inside torch"


def nested(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    """One jagged nested tensor for the whole batch, if the model's ops accept it (tried for real)."""
    nt = torch.nested.nested_tensor([torch.tensor(s) for s in seqs], layout=torch.jagged)
    try:
        with torch.no_grad():
            out = model(nt)
    except Exception as e:  # the real op that refused a jagged tensor, in torch's words
        raise Unsupported(f"jagged tensors fail at {failure(e)}") from None
    if out.is_nested or out.shape[0] != len(seqs):
        raise Unsupported(f"the model returned a {tuple(out.shape)} nested result instead of one row per sentence")
    return Prepared(model, [(nt,)], sum(map(len, seqs)))


STRATEGIES: dict[str, tuple[str, Callable[[nn.Module, list[list[int]], int], Prepared]]] = {
    "pad": ("pad to the longest + mask", pad),
    "bucket": ("bucket by length, pad within", bucket),
    "pack": ("pack_padded_sequence", pack),
    "nested": ("nested jagged tensor", nested),
    "loop": ("per-sample loop", loop),
}


@dataclass
class CompiledStrategy:
    """One strategy under torch.compile (measured in the compile worker; see batch_compiled.py)."""

    backend: str
    forward: Measurement | None = None
    train_step: Measurement | None = None
    compile_s: float | None = None  # first forward over the whole batch: every shape it compiles
    train_compile_s: float | None = None  # the same for the train step (grad mode compiles anew)
    compiles: int = 0  # graphs the backend compiled, forward and train step
    graph_breaks: list[str] = field(default_factory=list)  # reasons: the code between runs eagerly
    max_abs_diff: float | None = None  # compiled vs eager logits of the same strategy
    fallback: str | None = None  # why the figure is not a compiled one, or None
    error: str | None = None
    note: str | None = None  # e.g. why the train step has no figure

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend, "compile_s": self.compile_s, "train_compile_s": self.train_compile_s,
            "compiles": self.compiles, "graph_breaks": self.graph_breaks, "max_abs_diff": self.max_abs_diff,
            "fallback": self.fallback,
            "error": self.error, "note": self.note,
            "forward": self.forward.as_dict() if self.forward else None,
            "train_step": self.train_step.as_dict() if self.train_step else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompiledStrategy:
        m = {k: Measurement(**d[k]) if d.get(k) else None for k in ("forward", "train_step")}
        return cls(**{**d, **m})


def _ms(m: Measurement | None) -> dict[str, float | None]:
    return {"median_ms": m.median_ms if m else None, "iqr_ms": m.iqr_ms if m else None}


@dataclass
class StrategyResult:
    name: str
    title: str
    supported: bool
    note: str = ""
    forward: Measurement | None = None
    train_step: Measurement | None = None
    tokens_per_s: float | None = None
    padding_fraction: float | None = None
    flops_total: int | None = None
    flops_useful: int | None = None
    peak_bytes: int | None = None
    max_abs_diff: float | None = None
    distinct_shapes: int | None = None
    compiled: CompiledStrategy | None = None

    @property
    def agrees(self) -> bool | None:
        return None if self.max_abs_diff is None else self.max_abs_diff <= AGREE_TOL

    @property
    def compiled_forward(self) -> Measurement | None:
        """The compiled forward figure, only when it is an honest compiled one."""
        c = self.compiled
        return c.forward if c and not c.fallback and not c.error else None

    def as_dict(self) -> dict[str, Any]:
        c = self.compiled
        compiled = None if c is None else {
            **c.as_dict(), "forward_ms": _ms(c.forward)["median_ms"], "forward_iqr_ms": _ms(c.forward)["iqr_ms"],
            "train_step_ms": _ms(c.train_step)["median_ms"], "train_step_iqr_ms": _ms(c.train_step)["iqr_ms"],
            "speedup": self.forward.median_ms / self.compiled_forward.median_ms
            if self.forward and self.compiled_forward else None,
        }
        return {
            "name": self.name, "title": self.title, "supported": self.supported, "note": self.note,
            "forward_ms": _ms(self.forward)["median_ms"], "forward_iqr_ms": _ms(self.forward)["iqr_ms"],
            "train_step_ms": _ms(self.train_step)["median_ms"], "train_step_iqr_ms": _ms(self.train_step)["iqr_ms"],
            "runs": self.forward.runs if self.forward else None,
            "threads": self.forward.threads if self.forward else None,
            "tokens_per_s": self.tokens_per_s, "padding_fraction": self.padding_fraction,
            "flops_total": self.flops_total, "flops_useful": self.flops_useful, "peak_bytes": self.peak_bytes,
            "max_abs_diff": self.max_abs_diff, "agrees": self.agrees, "distinct_shapes": self.distinct_shapes,
            "compiled": compiled,
        }


@dataclass
class LabResult:
    lengths: list[int]
    strategies: list[StrategyResult] = field(default_factory=list)

    def strategy(self, name: str) -> StrategyResult:
        return next(s for s in self.strategies if s.name == name)

    def verdict(self) -> str:
        """The fastest forward among strategies that agree with the loop, eager or compiled, and why."""
        candidates = [(s.forward.median_ms, s.title, s) for s in self.strategies if s.agrees and s.forward]
        candidates += [(s.compiled_forward.median_ms, s.title + " (compiled)", s)
                       for s in self.strategies if s.agrees and s.compiled_forward]
        if not candidates:
            return "No strategy both ran and agreed with the per-sample loop."
        best_ms, best_title, best = min(candidates, key=lambda c: c[0])
        loop_ms = self.strategy("loop").forward.median_ms
        parts = [f"Fastest correct forward: **{best_title}**, {best_ms:.2f} ms, {loop_ms / best_ms:.1f}x the "
                 f"speed of the per-sample loop, computing {best.padding_fraction:.0%} padding"]
        pad_ = self.strategy("pad")
        if pad_.agrees and pad_ is not best:
            parts.append(f"padding to the longest computes {pad_.padding_fraction:.0%} pad positions and takes "
                         f"{pad_.forward.median_ms / best_ms:.1f}x as long")
        wrong = [s.title for s in self.strategies if s.agrees is False]
        if wrong:
            parts.append("**disagrees with the loop: " + ", ".join(wrong) + "**")
        return "; ".join(parts) + "."

    def as_dict(self) -> dict[str, Any]:
        return {"sentences": len(self.lengths), "tokens": sum(self.lengths), "lengths": self.lengths,
                "verdict": self.verdict(), "strategies": [s.as_dict() for s in self.strategies]}


def _flops(fn: Callable[[], torch.Tensor]) -> int:
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        fn()
    return counter.get_total_flops()


def prepare(model: nn.Module, name: str, seqs: list[list[int]], bucket_width: int) -> Prepared:
    if name not in STRATEGIES:
        raise InputError(f"unknown strategy {name!r}; one of {', '.join(STRATEGIES)}")
    if not 1 <= bucket_width <= MAX_TOKENS:
        raise InputError(f"bucket width must be between 1 and {MAX_TOKENS}; got {bucket_width}")
    return STRATEGIES[name][1](model, seqs, bucket_width)


def failure(e: BaseException) -> str:
    """Where in the model code and what torch said, in one line: 'models/x.py:N: RuntimeError: ...'."""
    return f"{_where(e)}: {one_line(e)}"


def timed(prep: Prepared, fn: Callable[..., torch.Tensor], label: str,
          budget_scale: float = 1.0) -> tuple[Measurement, Measurement | None, str | None]:
    """Forward (no grad) and train step (forward + backward) of a strategy, through `fn`; the train step
    is None, with the reason, when its backward cannot run (e.g. some jagged-tensor backwards)."""

    def fwd() -> None:
        with torch.no_grad():
            prep.run(fn)

    def step() -> None:
        prep.module.zero_grad(set_to_none=True)
        train_loss(prep.run(fn)).backward()

    forward = measure(f"{label} forward", fwd, FORWARD_BUDGET_S * budget_scale)
    try:
        step()
    except Exception as e:  # the strategy's forward works, its training does not: a result, said so
        return forward, None, f"forward only: the train step fails at {failure(e)}"
    return forward, measure(f"{label} train step", step, TRAIN_BUDGET_S * budget_scale), None


def iter_lab(model: nn.Module, texts: list[str], bucket_width: int = 32,
             budget_scale: float = 1.0) -> Iterator[str | LabResult]:
    """Run every strategy on `texts` eagerly; each is checked against the loop, counted and timed.
    Yields each strategy's title before it runs (for progress), then the LabResult."""
    seqs = token_ids(texts)
    prepare(model, "loop", seqs, bucket_width)  # validates the width before any work
    tokens = sum(map(len, seqs))
    by_name: dict[str, StrategyResult] = {}
    reference: torch.Tensor | None = None
    for name in ["loop", *[k for k in STRATEGIES if k != "loop"]]:  # the loop first: it is the reference
        title = STRATEGIES[name][0]
        yield title
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
        res.forward, res.train_step, step_note = timed(prep, prep.module, name, budget_scale)
        res.note = "; ".join([*notes, *filter(None, [step_note])])
        res.tokens_per_s = tokens / (res.forward.median_ms / 1e3)
        with MemoryProfile() as mem, torch.no_grad():
            prep.run()
        res.peak_bytes = mem.peak()
        by_name[name] = res
    yield LabResult([len(s) for s in seqs], [by_name[k] for k in STRATEGIES])


def run_lab(model: nn.Module, texts: list[str], bucket_width: int = 32, budget_scale: float = 1.0) -> LabResult:
    *_, result = iter_lab(model, texts, bucket_width, budget_scale)
    return result  # type: ignore[return-value]
