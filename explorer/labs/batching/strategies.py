"""The batching strategies: how one batch of sentences of different lengths is fed to a model.

Every strategy returns one row of logits per sentence, in the batch's order, so each can be checked
against the plain per-sample loop (define-by-run at its plainest, and the reference).
"""

from __future__ import annotations

import inspect
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from explorer.core.batches import pad_ids
from explorer.core.errors import InputError, one_line
from explorer.core.limits import MAX_TOKENS
from explorer.sources.registry import batch_activation_bytes
from models.rnn import UnrolledRNN


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


def _batched(model: nn.Module) -> None:
    if "lengths" not in inspect.signature(model.forward).parameters:
        raise Unsupported("this model has no padded form: each sentence has its own structure (e.g. its own tree)")


def loop(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    return Prepared(model, [(torch.tensor([s]),) for s in seqs], sum(map(len, seqs)))


def pad(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    _batched(model)
    ids, lengths = pad_ids(seqs)
    return Prepared(model, [(ids, lengths)], ids.numel())


def bucket(model: nn.Module, seqs: list[list[int]], width: int) -> Prepared:
    """Sort into buckets of `width` tokens of length, pad within each bucket."""
    _batched(model)
    buckets: dict[int, list[int]] = {}
    for i, s in enumerate(seqs):
        buckets.setdefault((len(s) - 1) // width, []).append(i)
    groups = [buckets[k] for k in sorted(buckets)]
    calls = [pad_ids([seqs[i] for i in idx]) for idx in groups]
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
    ids, lengths = pad_ids(seqs)
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


def prepare(model: nn.Module, name: str, seqs: list[list[int]], bucket_width: int) -> Prepared:
    if name not in STRATEGIES:
        raise InputError(f"unknown strategy {name!r}; one of {', '.join(STRATEGIES)}")
    if not 1 <= bucket_width <= MAX_TOKENS:
        raise InputError(f"bucket width must be between 1 and {MAX_TOKENS}; got {bucket_width}")
    return STRATEGIES[name][1](model, seqs, bucket_width)


def failure(e: BaseException) -> str:
    """Where in the model code and what torch said, in one line: 'models/x.py:N: RuntimeError: ...'."""
    return f"{_where(e)}: {one_line(e)}"
