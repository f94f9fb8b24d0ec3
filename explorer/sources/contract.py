"""The model contract's types: what a model source gives, and the model a lab runs on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn

from models import Knob, arch_label


@dataclass(frozen=True)
class Supports:
    """What a model can do beyond a forward on one sentence, so a lab can refuse up front with the reason."""

    batched: bool  # forward(ids, lengths=...) on a padded batch
    trainable: bool  # a train step (loss, backward)
    exportable: bool  # torch.export / ONNX / AOTInductor routes apply


class ModelSource(Protocol):
    name: str
    title: str
    summary: str
    supports: Supports
    tree: tuple[str, str] | None  # (leaf module, composing module) of a model whose graph is a parse tree
    own_code: bool  # the operator's own code (a file): the server builds and captures it in a worker process
    file: str | None  # the Python file that defines it, which the Code tab edits (None: a library's, a notebook's)

    def knobs(self) -> list[Knob]: ...

    def config(self, values: Mapping[str, Any] | None = None) -> Any:
        """A validated config from its defaults and `values`; a ConfigError by name, type and range."""
        ...

    def build(self, config: Any) -> nn.Module:
        """The model with deterministic weights for the config, in eval mode; it keeps its config as `cfg`."""
        ...

    def builds(self, module: nn.Module) -> bool:
        """Whether `module` is one of this source's models."""
        ...

    def example_inputs(self, text: str) -> tuple[torch.Tensor, ...]:
        """The forward's positional inputs for `text`."""
        ...

    def loss(self, output: torch.Tensor) -> torch.Tensor:
        """The scalar a train step differentiates."""
        ...

    def param_count(self, config: Any) -> int: ...

    def activation_bytes(self, config: Any, tokens: int, batch: int) -> int:
        """An upper bound of the bytes a train step saves for backward."""
        ...

    def structure(self, calls: Mapping[str, int]) -> dict[str, int]:
        """What an input decided, read off a run's module call counts: {"unrolled steps": 42}."""
        ...

    def decision(self, config: Any, ids: list[int]) -> str | None:
        """The input's decision as text where the graph alone hardly shows it ("((The cat) sat)"), else None."""
        ...


@dataclass(frozen=True)
class Subject:
    """The model a lab runs on: its source, its validated config, and (for labs that need a run) the text."""

    source: ModelSource
    config: Any
    text: str = ""
    playground: bool = False  # taken from the Playground, not named by the caller: a lab may use its own instead

    @property
    def model(self) -> str:
        return self.source.name

    @property
    def arch(self) -> str:
        return arch_label(self.model, self.config)

    def build(self) -> nn.Module:
        return self.source.build(self.config)
