"""Which modules ran, how often, and which autograd nodes each call created.

Autograd numbers nodes in creation order per thread (`sequence_nr`). A pre-hook and a post-hook
on every module note that counter, so a node belongs to the innermost module call whose interval
holds its number, including the nodes of composite ops that never surface in Python.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import torch
from torch import nn
from torch._C._autograd import _get_sequence_nr

from explorer.core.errors import InputError


class PastBound(InputError):
    """A run stopped at its time bound: the estimate that let it start was a gate, not a guarantee."""


@dataclass
class _Call:
    module: str
    call: int
    depth: int
    start: int
    end: int = -1


@dataclass
class ModuleTrace:
    """Context manager that hooks every module of `model` for the duration of one run; past `max_s` seconds (if
    given) the next module call raises PastBound, so a run cannot hold the process longer than its bound by more
    than one module's work."""

    model: nn.Module
    max_s: float | None = None
    calls: Counter[str] = field(default_factory=Counter)
    _intervals: list[_Call] = field(default_factory=list)
    _open: list[_Call] = field(default_factory=list)
    _owner: dict[int, tuple[str, int]] = field(default_factory=dict)
    _handles: list = field(default_factory=list)

    @property
    def parameters(self) -> list[torch.Tensor]:
        return list(self.model.parameters())

    def __enter__(self) -> ModuleTrace:
        self._deadline = None if self.max_s is None else time.monotonic() + self.max_s
        for name, module in self.model.named_modules():
            self._handles.append(module.register_forward_pre_hook(self._pre(name or "model")))
            self._handles.append(module.register_forward_hook(self._post))
        return self

    def __exit__(self, *exc: object) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for call in self._open:  # a forward that raised left these calls open: they made the nodes up to it
            call.end = _get_sequence_nr()
        self._open.clear()
        self._index()

    def _pre(self, name: str):
        def hook(module: nn.Module, args: tuple) -> None:
            if torch.compiler.is_compiling():  # inside scan/cond, traced by dynamo: one op in the graph, not calls
                return
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise PastBound(f"stopped after {self.max_s:g} s, at call {sum(self.calls.values()) + 1} of the "
                                f"model's modules ({name}): past GE_MAX_RUN_S, although its estimate was under it. "
                                "Try fewer tokens or a smaller architecture.")
            call = _Call(name, self.calls[name], len(self._open), _get_sequence_nr())
            self.calls[name] += 1
            self._open.append(call)
            self._intervals.append(call)

        return hook

    def _post(self, module: nn.Module, args: tuple, output: object) -> None:
        if torch.compiler.is_compiling():
            return
        self._open.pop().end = _get_sequence_nr()

    def _index(self) -> None:
        # Outer calls first, inner ones overwrite: each number ends up with its innermost call.
        for c in sorted(self._intervals, key=lambda c: c.depth):
            for seq in range(c.start, c.end):
                self._owner[seq] = (c.module, c.call)

    def owner(self, sequence_nr: int) -> tuple[str | None, int]:
        """(module path, call index) that created the node, or (None, 0) if none did."""
        return self._owner.get(sequence_nr, (None, 0))

    def counts(self) -> dict[str, int]:
        """Calls per module path; the root module is named "model"."""
        return dict(self.calls)
