"""The zoo: the project's own dynamic models (`models/`), each a model source."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from explorer.core.inputs import tokenize
from explorer.eager.capture import train_loss
from explorer.sources.contract import Supports
from models import ZOO, Knob, ModelEntry, build_model, make_config, param_count


@dataclass(frozen=True)
class ZooModel:
    entry: ModelEntry
    own_code = False

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def title(self) -> str:
        return self.entry.title

    @property
    def summary(self) -> str:
        return self.entry.summary

    @property
    def file(self) -> str:
        return sys.modules[self.entry.model_cls.__module__].__file__ or ""

    @property
    def supports(self) -> Supports:
        return Supports(batched=True, trainable=True, exportable=True)  # every zoo model: tests/labs cover each

    def knobs(self) -> list[Knob]:
        return self.entry.knobs()

    def config(self, values: Mapping[str, Any] | None = None) -> Any:
        return make_config(self.name, values)

    def build(self, config: Any) -> nn.Module:
        return build_model(self.name, config)

    def builds(self, module: nn.Module) -> bool:
        return isinstance(module, self.entry.model_cls)

    def example_inputs(self, text: str) -> tuple[torch.Tensor, ...]:
        return (tokenize(text).ids,)

    def loss(self, output: torch.Tensor) -> torch.Tensor:
        return train_loss(output)

    def param_count(self, config: Any) -> int:
        return param_count(self.name, config)

    def activation_bytes(self, config: Any, tokens: int, batch: int) -> int:
        return self.entry.activation_bytes(config, tokens, batch)

    @property
    def tree(self) -> tuple[str, str] | None:
        return self.entry.tree

    def structure(self, calls: Mapping[str, int]) -> dict[str, int]:
        return self.entry.structure(calls)

    def decision(self, config: Any, ids: list[int]) -> str | None:
        return None if self.entry.decision is None else self.entry.decision(config, ids)


def zoo_sources() -> list[ZooModel]:
    return [ZooModel(e) for e in ZOO.values()]
