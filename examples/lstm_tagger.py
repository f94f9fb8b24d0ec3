"""A packed LSTM tagger over the input's bytes: one tag per token, as a course's sequence-labelling model.

Run it: `python -m explorer inspect --model examples/lstm_tagger.py --text "The cat sat." --set hidden=32`."""

from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from explorer.sources.userfile import Range


class Tagger(nn.Module):
    def __init__(self, embed: int, hidden: int, tags: int, cell: str, bidirectional: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, embed)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(embed, hidden, batch_first=True, bidirectional=bidirectional)
        self.tag = nn.Linear(hidden * (2 if bidirectional else 1), tags)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        lengths = torch.full((ids.shape[0],), ids.shape[1], dtype=torch.long)
        packed = pack_padded_sequence(self.embed(ids), lengths, batch_first=True)
        out, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True)
        return self.tag(out)  # (batch, tokens, tags): one tag per byte


def build(embed: Annotated[int, Range(4, 256)] = 32, hidden: Annotated[int, Range(4, 512)] = 64,
          tags: Annotated[int, Range(2, 64)] = 12, cell: Literal["lstm", "gru"] = "lstm",
          bidirectional: bool = True) -> nn.Module:
    """A packed LSTM (or GRU) tagger: one tag per byte of the input."""
    return Tagger(embed, hidden, tags, cell, bidirectional)


def loss(tags: torch.Tensor) -> torch.Tensor:
    """A tagger trains on every token: cross-entropy of each byte's tags against tag 0 (the weights are random)."""
    return F.cross_entropy(tags.flatten(0, 1), torch.zeros(tags.shape[0] * tags.shape[1], dtype=torch.long))
