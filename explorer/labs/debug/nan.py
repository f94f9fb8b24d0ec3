"""Where did the NaN come from? Three ways of finding the forward line, each timed against a plain step in rotated
rounds: autograd's anomaly mode, forward hooks on every module, and a dispatch mode that checks every op's output."""

from __future__ import annotations

import linecache
import re
import traceback
import warnings
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
import torch._dynamo as dynamo
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from explorer.compile.observe import message_line
from explorer.core.limits import TRAIN_BUDGET_S
from explorer.core.paths import EDITOR, PROJECT, in_editor, sanitize
from explorer.eager.capture import train_loss
from explorer.eager.compare import Comparison, interleaved

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class Finding:
    method: str  # "detect_anomaly", "forward hooks", "dispatch mode"
    found: str  # what it names: a backward function, a module and call, an op, or "nothing"
    where: str  # the user's line it names ("" if none)
    cost: Comparison | None  # a step under the method (a) against a plain step (b), in rotated rounds; None when
    # the method cannot run on this model (said in `found`)

    @property
    def ms(self) -> float | None:
        return self.cost.measurement(self.method).median_ms if self.cost else None

    def cost_said(self) -> str:
        """'3.1x a plain step (95% interval 2.9-3.3x, 12 pairs)', or that no cost was resolved at this noise, or
        (noise the other way) that the step under it ran faster by its whole interval."""
        c = self.cost
        if c is None:
            return "not timed: it cannot run on this model"
        if not c.enough:
            return f"{c.ratio:.2f}x a plain step: {c.interval()}"
        if c.faster == PLAIN:
            return f"{c.ratio:.1f}x a plain step ({c.interval()})"
        if c.faster == self.method:
            return f"no cost: {c.ratio:.2f}x a plain step, faster by its whole interval ({c.interval()})"
        return f"no cost resolved against a plain step (±{c.noise:.0%}; {c.ratio:.2f}x, {c.interval()})"

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "found": self.found, "where": self.where, "ms": self.ms,
                "cost": self.cost.ratio if self.cost else None, "cost_said": self.cost_said(),
                "comparison": self.cost.as_dict() if self.cost else None}


def _mine(file: str) -> bool:
    """A file of the user's: the models', or the model's file as edited in the Code tab."""
    return file.startswith(PROJECT + "models/") or file == EDITOR


def _user_frame(frames: list[traceback.FrameSummary]) -> str:
    mine = [f for f in frames if _mine(f.filename)]
    return in_editor(f"{sanitize(mine[-1].filename)}:{mine[-1].lineno}: {(mine[-1].line or '').strip()}") \
        if mine else ""


def _finite(x: object) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in tree_leaves(x) if isinstance(t, torch.Tensor)
               and t.is_floating_point())


def _step(model: nn.Module, ids: torch.Tensor) -> None:
    model.zero_grad(set_to_none=True)
    train_loss(model(ids), model).backward()


def anomaly(model: nn.Module, ids: torch.Tensor) -> tuple[str, str]:
    """autograd.detect_anomaly: the backward function that returned NaN, and the forward line it recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.autograd.detect_anomaly():
                _step(model, ids)
        except RuntimeError as e:
            forward = next((str(w.message) for w in caught if "Traceback of forward call" in str(w.message)), "")
            frames = [ln.strip() for ln in forward.splitlines() if ln.strip().startswith('File "')]
            mine = [m for f in frames if (m := _FRAME.search(f)) and _mine(m.group(1))]
            where = ""
            if mine:
                file, line = mine[-1].group(1), int(mine[-1].group(2))
                where = in_editor(f"{sanitize(file)}:{line}: {linecache.getline(file, line).strip()}")
            return message_line(e).split(" returned")[0].replace("Function ", ""), where
    return "nothing (no backward function returned NaN)", ""


def hooks(model: nn.Module, ids: torch.Tensor) -> tuple[str, str]:
    """Forward hooks on every module: the first call whose inputs were finite and whose output was not."""
    first: list[str] = []
    calls: dict[str, int] = {}

    def watch(name: str) -> Any:
        def hook(module: nn.Module, args: tuple, out: object) -> None:
            calls[name] = calls.get(name, 0) + 1
            if not first and _finite(args) and not _finite(out):
                first.append(f"{name} (call {calls[name]})")
        return hook

    handles = [m.register_forward_hook(watch(n or "model")) for n, m in model.named_modules()]
    try:
        _step(model, ids)
    finally:
        for h in handles:
            h.remove()
    return (first[0], "") if first else ("nothing (every module's output was finite)", "")


class _FirstNonFinite(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.found: tuple[str, str] | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if self.found is None and _finite((args, kwargs)) and not _finite(out):
            self.found = (str(func), _user_frame(traceback.extract_stack()))
        return out


def dispatch(model: nn.Module, ids: torch.Tensor) -> tuple[str, str]:
    """A TorchDispatchMode that checks every op's output: the first op with finite inputs and a non-finite
    output, and the user's line that called it."""
    mode = _FirstNonFinite()
    with mode:
        _step(model, ids)
    return mode.found or ("nothing (every op's output was finite)", "")


METHODS = {"detect_anomaly": anomaly, "forward hooks": hooks, "dispatch mode": dispatch}


PLAIN = "plain step"


def locate(model: nn.Module, ids: torch.Tensor, budget_s: float = 4 * TRAIN_BUDGET_S) -> list[Finding]:
    """Every method on the same model and input: what it names, then its cost against a plain step, all of them
    timed round-robin with the plain step (so each cost is a paired comparison)."""
    named, failed = {}, {}
    for name, method in METHODS.items():
        try:
            named[name] = method(model, ids)
        except Exception as e:  # a dispatch mode cannot trace a scan or cond: said, not timed
            failed[name] = f"not run on this model: {type(e).__name__}: {message_line(e)[:160]}"
            # such a failure leaves dynamo's cache of the scan's body broken for every later forward: cleared
            dynamo.reset()
    rounds = interleaved({PLAIN: lambda: _step(model, ids)}
                         | {name: partial(METHODS[name], model, ids) for name in named}, budget_s)
    return [Finding(name, *named[name], rounds.comparison(name, PLAIN)) if name in named
            else Finding(name, failed[name], "", None) for name in METHODS]
