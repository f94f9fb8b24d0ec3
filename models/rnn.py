"""Unrolled RNN: a Python loop over the tokens, one cell call per time step.

The loop is the point: the autograd graph has one copy of the cell per token, so it grows with
the input. (nn.LSTM on CPU would hide the loop in one oneDNN node.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

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

    def _run(self, cell: nn.Module, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        batch = xs[0].shape[0]
        h = xs[0].new_zeros(batch, self.cfg.hidden)
        state = (h, h) if self.cfg.cell == "lstm" else h
        outs = []
        for x in xs:
            state = cell(x, state)
            outs.append(state[0] if self.cfg.cell == "lstm" else state)
        return outs

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        xs = list(self.embed(ids).unbind(1))
        finals = []
        for layer in self.layers:
            per_dir = []
            finals = []
            for name, cell in layer.items():
                seq = xs if name == "fwd" else xs[::-1]
                outs = self._run(cell, seq)
                finals.append(outs[-1])
                per_dir.append(outs if name == "fwd" else outs[::-1])
            # Each time step's input to the next layer: the directions side by side.
            xs = [torch.cat(step, dim=-1) for step in zip(*per_dir, strict=True)] if len(per_dir) > 1 else per_dir[0]
        return self.head(torch.cat(finals, dim=-1))
