"""The inputs every route's artefact is checked on: the current one, other lengths, and another text of the
current length that the model treats differently (another exit depth, another bracketing)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from explorer.core.errors import InputError
from explorer.core.examples import EXAMPLES
from explorer.core.fmt import count
from explorer.core.inputs import text_of_length, tokenize
from explorer.core.limits import MAX_TOKENS
from explorer.eager.trace import ModuleTrace
from explorer.sources.registry import source

DEFAULT_LENGTHS = (8, 32, 128)
MAX_LENGTHS = 8


@dataclass(frozen=True)
class CheckInput:
    label: str
    tokens: list[int]

    def ids(self) -> torch.Tensor:
        return torch.tensor([self.tokens], dtype=torch.long)


def parse_lengths(raw: str | list[int] | tuple[int, ...]) -> list[int]:
    """'8,32,128' or [8, 32, 128] -> [8, 32, 128], each within the token limit; a clear message otherwise."""
    parts = raw.replace(" ", "").split(",") if isinstance(raw, str) else list(raw)
    try:
        lengths = sorted({int(p) for p in parts if p != ""})
    except (TypeError, ValueError):
        raise InputError(f"lengths must be whole numbers separated by commas; got {raw!r}") from None
    if not lengths or len(lengths) > MAX_LENGTHS:
        raise InputError(f"give 1 to {MAX_LENGTHS} lengths to check; got {len(lengths)}")
    if lengths[0] < 1 or lengths[-1] > MAX_TOKENS:
        raise InputError(f"lengths must be between 1 and {MAX_TOKENS} (the token limit); got {raw!r}")
    return lengths


def structure(model_name: str, model: nn.Module, ids: torch.Tensor) -> dict[str, int]:
    """What this input made the model do (blocks run, tree leaves, ...), from its module calls."""
    with torch.no_grad(), ModuleTrace(model) as trace:
        model(ids)
    return source(model_name).structure(trace.counts())


def _describe(s: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in s.items())


def check_inputs(model_name: str, model: nn.Module, text: str, lengths: list[int]) -> list[CheckInput]:
    """The current input first, then each other length (the text repeated or cut), then another text of the
    current length: the one whose structure differs most readily from the current input's, if any does."""
    current = tokenize(text)
    n = len(current.ids[0])
    inputs = [CheckInput(f"{count(n, 'token')} (the current input)", current.ids[0].tolist())]
    inputs += [CheckInput(count(k, "token"), tokenize(text_of_length(current.text, k)).ids[0].tolist())
               for k in lengths if k != n]
    mine = structure(model_name, model, current.ids)
    candidates = [current.text[::-1], *(text_of_length(t, n) for t in EXAMPLES.values())]
    others = [tokenize(c) for c in candidates if c and len(c.encode()) == n and c != current.text]
    if others:
        pick = next((o for o in others if structure(model_name, model, o.ids) != mine), others[0])
        theirs = structure(model_name, model, pick.ids)
        how = f"{_describe(theirs)}, not {_describe(mine)}" if theirs != mine else f"same {_describe(mine)}"
        inputs.append(CheckInput(f"{count(n, 'token')}, another text ({how})", pick.ids[0].tolist()))
    return inputs
