"""An activation estimate for a model whose code the project did not write (a user's file, a library
architecture): a train step's saved bytes measured at two short lengths, fitted as bytes = a*T + b*T^2
(attention's score matrices are the T^2 term) and extrapolated to the length asked about."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from explorer.eager.capture import capture_run

PROBE_TOKENS = (16, 32)  # short enough to cost milliseconds, long enough for the T^2 term to show


class ProbedActivations:
    """Per config, the fit (a, b) of one source's models; each config is probed once."""

    def __init__(self, build: Callable[[Any], nn.Module]) -> None:
        self._build, self._fits = build, {}

    def __call__(self, config: Any, tokens: int, batch: int) -> int:
        if config not in self._fits:
            model = self._build(config)
            (t1, t2), (s1, s2) = PROBE_TOKENS, [capture_run(model, torch.zeros(1, t, dtype=torch.long)).saved_bytes
                                                for t in PROBE_TOKENS]
            b = max(0.0, (s2 / t2 - s1 / t1) / (t2 - t1))
            self._fits[config] = (max(0.0, s1 / t1 - b * t1), b)
        a, b = self._fits[config]
        return int(batch * (a * tokens + b * tokens * tokens))
