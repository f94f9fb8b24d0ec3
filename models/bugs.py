"""Bugs to inject for the debugging lab: each a named, tested change to a model's token embeddings (a forward
hook on its `embed` module, or a model's first nn.Embedding), so the same bug applies to every model without
editing its code. The
line that goes wrong is in this file: that is the line a good error message should name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

SHAPE_BUG_TOKENS = 16  # the shape bug fires on inputs longer than this


def _shape(module: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
    if out.shape[1] > SHAPE_BUG_TOKENS:  # only long inputs take this path
        return out.reshape(out.shape[0], -1, out.shape[1] * out.shape[2] + 1)  # BUG: a size that never divides
    return out


def _nan_forward(module: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
    scale = torch.log(1.0 - out.abs().amax(-1, keepdim=True))  # BUG: log of a negative number is NaN
    return out * scale


def _nan_backward(module: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
    zero = out - out.detach()  # 0, with a gradient of 1
    return out + torch.sqrt(zero * zero)  # BUG: sqrt at 0 is fine forward; its gradient is inf * 0 = NaN


def _silent_mask(module: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
    keep = torch.ones_like(out[..., :1])
    keep[:, -1] = 0  # BUG: off by one: the last token is masked out
    return out * keep


def _wrong_branch(module: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
    if bool((args[0] >= 0x80).any()):  # BUG: any non-ASCII byte takes the "first token only" path
        return out[:, :1].expand_as(out)
    return out


@dataclass(frozen=True)
class Bug:
    name: str
    title: str
    what: str  # one sentence: what goes wrong, and when
    hook: Callable[[nn.Module, tuple, torch.Tensor], torch.Tensor]
    marker: str  # text of the buggy line in this file (tests derive the line number from it)

    def inject(self, model: nn.Module) -> RemovableHandle:
        """Apply the bug to `model`'s token embeddings (embedding_path); the handle removes it."""
        path = embedding_path(model)
        if path is None:
            raise ValueError(f"{type(model).__name__} has no token embedding (nn.Embedding) to inject a bug into")
        return model.get_submodule(path).register_forward_hook(self.hook)


def embedding_path(model: nn.Module) -> str | None:
    """Where the token embeddings come from: a zoo model's `embed`, else the model's first nn.Embedding (a user's
    model, a library architecture's word embeddings); None if it has none."""
    modules = dict(model.named_modules())
    if "embed" in modules:
        return "embed"
    return next((name for name, m in modules.items() if isinstance(m, nn.Embedding)), None)


BUGS: dict[str, Bug] = {b.name: b for b in (
    Bug("shape", "shape bug on long inputs",
        f"a reshape with a wrong size, only for inputs longer than {SHAPE_BUG_TOKENS} tokens", _shape,
        "BUG: a size that never divides"),
    Bug("nan_forward", "NaN in forward", "the log of a negative number makes every embedding NaN", _nan_forward,
        "BUG: log of a negative number"),
    Bug("nan_backward", "NaN only in backward",
        "sqrt at 0: the forward is unchanged, the gradient is NaN", _nan_backward, "BUG: sqrt at 0"),
    Bug("silent", "silent off-by-one", "the last token is masked out: the output changes, nothing fails",
        _silent_mask, "BUG: off by one"),
    Bug("branch", "wrong branch for some inputs",
        "any non-ASCII byte sends the sentence down a path that keeps only its first token: wrong, silently, for "
        "those inputs only",
        _wrong_branch, "BUG: any non-ASCII byte"),
)}
