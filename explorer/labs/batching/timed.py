"""Timing one batching strategy, eager or compiled: the forward and, where its backward runs, the train step."""

from __future__ import annotations

from collections.abc import Callable

import torch

from explorer.core.limits import FORWARD_BUDGET_S, TRAIN_BUDGET_S
from explorer.eager.capture import train_loss
from explorer.eager.timing import Measurement, measure
from explorer.labs.batching.strategies import Prepared, failure


def timed(prep: Prepared, fn: Callable[..., torch.Tensor], label: str,
          budget_scale: float = 1.0) -> tuple[Measurement, Measurement | None, str | None]:
    """Forward (no grad) and train step (forward + backward) of a strategy, through `fn`; the train step
    is None, with the reason, when its backward cannot run (e.g. some jagged-tensor backwards)."""

    def step() -> None:
        prep.module.zero_grad(set_to_none=True)
        train_loss(prep.run(fn)).backward()

    forward = measure(f"{label} forward", no_grad(lambda: prep.run(fn)), FORWARD_BUDGET_S * budget_scale)
    try:
        step()
    except Exception as e:  # the strategy's forward works, its training does not: a result, said so
        return forward, None, f"forward only: the train step fails at {failure(e)}"
    return forward, measure(f"{label} train step", step, TRAIN_BUDGET_S * budget_scale), None


def no_grad(fn: Callable[[], object]) -> Callable[[], None]:
    """`fn` as an inference call (no autograd graph recorded)."""

    def call() -> None:
        with torch.no_grad():
            fn()

    return call
