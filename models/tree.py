"""Tree network: a recursive cell composes the tokens bottom-up along a binary bracketing.

The bracketing is derived from the text itself, so the autograd graph *is* the parse tree: one
composition per internal node, one leaf per token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.config import knob
from models.heads import NUM_CLASSES
from models.tokenizer import VOCAB_SIZE

Tree = int | tuple  # a token index, or a (left, right) pair of subtrees

_CLAUSE_END = frozenset(b".,;:!?")


def _balanced(items: list[Tree]) -> Tree:
    while len(items) > 1:
        paired = [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        items = paired + ([items[-1]] if len(items) % 2 else [])
    return items[0]


def _right(items: list[Tree]) -> Tree:
    tree = items[-1]
    for item in reversed(items[:-1]):
        tree = (item, tree)
    return tree


def _left(items: list[Tree]) -> Tree:
    tree = items[0]
    for item in items[1:]:
        tree = (tree, item)
    return tree


def _text_tree(ids: list[int]) -> Tree:
    """Characters (a UTF-8 lead byte and its continuation bytes) are balanced subtrees, words are
    balanced over characters, a clause is right-branching over words (as English phrases mostly
    are), and the sentence is left-branching over clauses ended by punctuation."""
    chars: list[list[int]] = []
    for i, b in enumerate(ids):
        if chars and 0x80 <= b < 0xC0:  # continuation byte joins its character
            chars[-1].append(i)
        else:
            chars.append([i])
    clauses: list[Tree] = []
    words: list[Tree] = []
    word: list[Tree] = []
    for char in chars:
        word.append(_balanced(list(char)))
        lead = ids[char[0]]
        if lead == 0x20 or lead in _CLAUSE_END:  # a space or punctuation ends the word it follows
            words.append(_balanced(word))
            word = []
            if lead in _CLAUSE_END:
                clauses.append(_right(words))
                words = []
    if word:
        words.append(_balanced(word))
    if words:
        clauses.append(_right(words))
    return _left(clauses)


BRACKETINGS = {
    "text": _text_tree,
    "balanced": lambda ids: _balanced(list(range(len(ids)))),
    "left": lambda ids: _left(list(range(len(ids)))),
    "right": lambda ids: _right(list(range(len(ids)))),
}


def bracket(ids: list[int], mode: str = "text") -> Tree:
    """A binary tree whose leaves are 0..len(ids)-1 in order."""
    return BRACKETINGS[mode](ids)


def _span_text(data: bytes, lo: int, hi: int, composed: str) -> str:
    """A subtree inside one word is written as the word; one across words as its composition."""
    piece = data[lo:hi + 1]
    if b" " in piece.strip(b" "):
        return composed
    return piece.decode("utf-8", "replace").strip() or "␣"


def bracketing_text(cfg: TreeConfig, ids: list[int]) -> str:
    """The bracketing this input gets, written with its words whole: "((The cat) sat)". Iterative, like the
    forward: a right-branching tree over 500 tokens is 500 deep."""
    tree = bracket(ids, cfg.bracketing)
    data = bytes(ids)
    done: list[tuple[int, int, str]] = []  # (first leaf, last leaf, text) of each finished subtree
    stack: list[tuple[Tree, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if isinstance(node, int):
            done.append((node, node, ""))
        elif expanded:
            (rlo, rhi, right), (llo, lhi, left) = done.pop(), done.pop()
            done.append((llo, rhi, f"({_span_text(data, llo, lhi, left)} {_span_text(data, rlo, rhi, right)})"))
        else:
            stack += [(node, True), (node[1], False), (node[0], False)]
    lo, hi, text = done[0]
    return _span_text(data, lo, hi, text)


@dataclass(frozen=True)
class TreeConfig:
    cell: str = knob("treelstm", "Composition cell at each internal node.", choices=("rnn", "treelstm"))
    hidden: int = knob(64, "State size of every tree node.", min=4, max=512, step=4)
    bracketing: str = knob(
        "text", "text: from words and punctuation; or a fixed balanced/left/right shape.",
        choices=tuple(BRACKETINGS),
    )
    seed: int = knob(0, "Seed of the random weights.", min=0, max=2**31 - 1)


class Compose(nn.Module):
    """(left, right) -> parent. `rnn`: tanh(W[l; r]); `treelstm`: binary Tree-LSTM (Tai et al. 2015)."""

    def __init__(self, hidden: int, cell: str):
        super().__init__()
        self.lstm = cell == "treelstm"
        self.proj = nn.Linear(2 * hidden, (5 if self.lstm else 1) * hidden)

    def forward(self, left: tuple[torch.Tensor, torch.Tensor], right: tuple[torch.Tensor, torch.Tensor]):
        z = self.proj(torch.cat([left[0], right[0]], dim=-1))
        if not self.lstm:
            h = torch.tanh(z)
            return h, h
        i, f_l, f_r, o, u = z.chunk(5, dim=-1)
        c = i.sigmoid() * u.tanh() + f_l.sigmoid() * left[1] + f_r.sigmoid() * right[1]
        return o.sigmoid() * c.tanh(), c


class TreeNetwork(nn.Module):
    def __init__(self, cfg: TreeConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(VOCAB_SIZE, cfg.hidden)
        self.leaf = nn.Linear(cfg.hidden, cfg.hidden)
        self.compose = Compose(cfg.hidden, cfg.cell)
        self.head = nn.Linear(cfg.hidden, NUM_CLASSES)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        tree = bracket(ids[0].tolist(), self.cfg.bracketing)
        x = self.embed(ids)
        # Iterative post-order walk: a right-branching tree over 500 tokens is 500 deep.
        stack: list[tuple[Tree, bool]] = [(tree, False)]
        values: list[tuple[torch.Tensor, torch.Tensor]] = []
        while stack:
            node, expanded = stack.pop()
            if isinstance(node, int):
                h = torch.tanh(self.leaf(x[:, node]))
                values.append((h, torch.zeros_like(h)))
            elif expanded:
                right = values.pop()
                values.append(self.compose(values.pop(), right))
            else:
                stack += [(node, True), (node[1], False), (node[0], False)]
        return self.head(values[0][0])


def activation_bytes(cfg: TreeConfig, tokens: int, batch: int = 1) -> int:
    """Upper bound of the bytes a train step saves for backward (float32): a tree over T leaves has
    2T - 1 nodes, each saving a few hidden-sized vectors (its children, gates and state)."""
    return 4 * batch * tokens * 16 * cfg.hidden
