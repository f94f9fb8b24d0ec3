"""What every source of models the project did not write shares (a user's file, a library architecture, a
notebook's object): byte ids in, the default loss, nothing the input decides that the source can name, and an
activation estimate from a train step's saved bytes measured at two short lengths, fitted as bytes = a*T + b*T^2
(attention's score matrices are the T^2 term) and extrapolated to the length asked about."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from explorer.core.inputs import tokenize
from explorer.eager.capture import capture_run, train_loss

PROBE_TOKENS = (16, 32)  # short enough to cost milliseconds, long enough for the T^2 term to show


class ProbedSource:
    """The shared half of such a source; a subclass builds its models (`build`)."""

    file: str | None = None  # no file the Code tab could edit, unless a subclass says which

    def __init__(self) -> None:
        self._fits: dict[Any, tuple[float, float]] = {}  # per config, the fit (a, b); each config probed once

    def build(self, config: Any) -> nn.Module:
        raise NotImplementedError

    def example_inputs(self, text: str) -> tuple[torch.Tensor, ...]:
        return (tokenize(text).ids,)

    def loss(self, output: torch.Tensor) -> torch.Tensor:
        return train_loss(output)

    def activation_bytes(self, config: Any, tokens: int, batch: int) -> int:
        """Probed at two short lengths and extrapolated."""
        if config not in self._fits:
            model = self.build(config)
            (t1, t2), (s1, s2) = PROBE_TOKENS, [capture_run(model, torch.zeros(1, t, dtype=torch.long)).saved_bytes
                                                for t in PROBE_TOKENS]
            b = max(0.0, (s2 / t2 - s1 / t1) / (t2 - t1))
            self._fits[config] = (max(0.0, s1 / t1 - b * t1), b)
        a, b = self._fits[config]
        return int(batch * (a * tokens + b * tokens * tokens))

    def structure(self, calls: Mapping[str, int]) -> dict[str, int]:
        return {}

    def decision(self, config: Any, ids: list[int]) -> str | None:
        return None
