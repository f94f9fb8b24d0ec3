"""Timing a batching strategy's train step (forward + backward), eager or compiled; forwards are timed side by
side (explorer/eager/compare.py), where the lab's comparisons come from."""

from __future__ import annotations

from collections.abc import Callable

import torch

from explorer.core.limits import TRAIN_BUDGET_S
from explorer.eager.capture import train_loss, training
from explorer.eager.timing import Measurement, measure
from explorer.labs.batching.strategies import Prepared, failure


def train_step(prep: Prepared, fn: Callable[..., torch.Tensor], label: str,
               budget_scale: float = 1.0) -> tuple[Measurement | None, str | None]:
    """The strategy's train step through `fn`, timed; None, with the reason, when its backward cannot run (e.g.
    some jagged-tensor backwards)."""

    def step() -> None:
        prep.module.zero_grad(set_to_none=True)
        train_loss(prep.run(fn)).backward()

    with training(prep.module):
        try:
            step()
        except Exception as e:  # the strategy's forward works, its training does not: a result, said so
            return None, f"forward only: the train step fails at {failure(e)}"
        return measure(f"{label} train step", step, TRAIN_BUDGET_S * budget_scale), None


def no_grad(fn: Callable[[], object]) -> Callable[[], None]:
    """`fn` as an inference call (no autograd graph recorded)."""

    def call() -> None:
        with torch.no_grad():
            fn()

    return call
