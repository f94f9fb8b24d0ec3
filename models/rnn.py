"""Unrolled RNN: a Python loop over the tokens, one cell call per time step.

The loop is the point: the autograd graph has one copy of the cell per token, so it grows with
the input. (nn.LSTM on CPU would hide the loop in one oneDNN node.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch._higher_order_ops.scan import scan  # private in 2.13, and the only loop that exports dynamically

from models.config import knob
from models.heads import NUM_CLASSES
from models.tokenizer import VOCAB_SIZE

_CELLS = {"rnn": nn.RNNCell, "gru": nn.GRUCell, "lstm": nn.LSTMCell}


@dataclass(frozen=True)
class RNNConfig:
    cell: str = knob("gru", "Recurrent cell run at every time step.", choices=("rnn", "gru", "lstm"))
    layers: int = knob(1, "Stacked recurrent layers; each unrolls over all tokens.", min=1, max=4)
    hidden: int = knob(64, "Hidden state size of each cell.", min=4, max=512, step=4)
    embed: int = knob(32, "Token embedding size.", min=4, max=512, step=4)
    bidirectional: bool = knob(False, "Also run each layer right-to-left (doubles the unroll).")
    loop: str = knob("python", "How the time loop is written: a Python for loop (one cell call per token in the "
                     "graph) or torch's scan operator (one op for the whole loop: exports with a dynamic length; a "
                     "padded batch still uses the Python loop).", choices=("python", "scan"))
    seed: int = knob(0, "Seed of the random weights.", min=0, max=2**31 - 1)


class UnrolledRNN(nn.Module):
    def __init__(self, cfg: RNNConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(VOCAB_SIZE, cfg.embed)
        dirs = ("fwd", "bwd") if cfg.bidirectional else ("fwd",)
        self.layers = nn.ModuleList()
        width = cfg.embed
        for _ in range(cfg.layers):
            self.layers.append(nn.ModuleDict({d: _CELLS[cfg.cell](width, cfg.hidden) for d in dirs}))
            width = cfg.hidden * len(dirs)
        self.head = nn.Linear(width, NUM_CLASSES)

    def _run(self, cell: nn.Module, xs: list[torch.Tensor], mask: torch.Tensor | None) -> list[torch.Tensor]:
        batch = xs[0].shape[0]
        h = xs[0].new_zeros(batch, self.cfg.hidden)
        state = (h, h) if self.cfg.cell == "lstm" else h
        outs = []
        for t, x in enumerate(xs):
            new = cell(x, state)
            if mask is not None:  # padded batch: a finished sequence keeps its state through the pads
                keep = mask[:, t, None]
                new = tuple(torch.where(keep, n, o) for n, o in zip(new, state, strict=True)) \
                    if self.cfg.cell == "lstm" else torch.where(keep, new, state)
            state = new
            outs.append(state[0] if self.cfg.cell == "lstm" else state)
        return outs

    def _scan(self, cell: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """The same recurrence as one scan op over time: (B, T, in) -> (B, T, hidden). The cell's weights are
        the Python loop's, so both variants compute the same function."""
        h = x.new_zeros(x.shape[0], self.cfg.hidden)
        lstm = self.cfg.cell == "lstm"

        def step(state: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
                 xt: torch.Tensor) -> tuple[torch.Tensor | tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
            new = cell(xt, state)
            return new, (new[0] if lstm else new).clone()  # scan's outputs may not alias its carry

        _, ys = scan(step, (h, h) if lstm else h, x, dim=1)
        return ys

    def _forward_scan(self, x: torch.Tensor) -> torch.Tensor:
        finals = []
        for layer in self.layers:
            per_dir, finals = [], []
            for name, cell in layer.items():
                ys = self._scan(cell, x if name == "fwd" else x.flip(1))
                finals.append(ys[:, -1])
                per_dir.append(ys if name == "fwd" else ys.flip(1))
            x = torch.cat(per_dir, dim=-1)
        return self.head(torch.cat(finals, dim=-1))

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """ids: (B, T). With `lengths`, rows are right-padded and each row stops at its own length."""
        x = self.embed(ids)
        if self.cfg.loop == "scan" and lengths is None:
            return self._forward_scan(x)
        mask = None if lengths is None else torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        # The backward direction reads each row's own tokens in reverse (pads stay at the end).
        rev = None if lengths is None else torch.where(
            mask, lengths[:, None] - 1 - torch.arange(ids.shape[1])[None, :], torch.arange(ids.shape[1])[None, :])
        xs = list(x.unbind(1))
        finals = []
        for layer in self.layers:
            per_dir = []
            finals = []
            for name, cell in layer.items():
                seq = xs if name == "fwd" else _reverse(xs, rev)
                outs = self._run(cell, seq, mask)
                finals.append(outs[-1])
                per_dir.append(outs if name == "fwd" else _reverse(outs, rev))
            # Each time step's input to the next layer: the directions side by side.
            xs = [torch.cat(step, dim=-1) for step in zip(*per_dir, strict=True)] if len(per_dir) > 1 else per_dir[0]
        return self.head(torch.cat(finals, dim=-1))


def _reverse(xs: list[torch.Tensor], rev: torch.Tensor | None) -> list[torch.Tensor]:
    if rev is None:
        return xs[::-1]
    stacked = torch.stack(xs, dim=1)
    return list(stacked.gather(1, rev[:, :, None].expand(-1, -1, stacked.shape[-1])).unbind(1))


_GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def activation_bytes(cfg: RNNConfig, tokens: int, batch: int = 1) -> int:
    """Upper bound of the bytes a train step saves for backward (float32; checked in tests/test_limits.py).

    Per step and direction a cell saves its input, its state and ~2 copies of its gates; a padded batch
    also keeps the masked state (and the reversed copy of each row, bidirectional)."""
    dirs = 2 if cfg.bidirectional else 1
    state = cfg.hidden * (2 + 2 * _GATES[cfg.cell])
    per_step = sum(dirs * ((cfg.embed if layer == 0 else dirs * cfg.hidden) + state) for layer in range(cfg.layers))
    return 4 * batch * tokens * (2 * cfg.embed + per_step)
