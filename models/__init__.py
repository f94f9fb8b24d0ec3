"""The zoo of dynamic models: pure torch, each built from a config dataclass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from models.config import ConfigError, Knob, build_config, knobs
from models.early_exit import EarlyExitConfig, EarlyExitEncoder
from models.rnn import RNNConfig, UnrolledRNN
from models.transformer import TransformerConfig, TransformerEncoder
from models.tree import TreeConfig, TreeNetwork


@dataclass(frozen=True)
class ModelEntry:
    name: str
    title: str
    summary: str
    config_cls: type
    model_cls: type[nn.Module]

    def knobs(self) -> list[Knob]:
        return knobs(self.config_cls)


ZOO: dict[str, ModelEntry] = {
    e.name: e
    for e in (
        ModelEntry(
            "rnn", "Unrolled RNN",
            "A Python loop over the tokens: one cell call per token, so the graph grows with the input.",
            RNNConfig, UnrolledRNN,
        ),
        ModelEntry(
            "transformer", "Transformer encoder",
            "Self-attention over exactly the tokens given: the graph's size is fixed, its shapes grow.",
            TransformerConfig, TransformerEncoder,
        ),
        ModelEntry(
            "early_exit", "Early exit",
            "Blocks with a confidence head after each: it stops once confident, so depth depends on the input.",
            EarlyExitConfig, EarlyExitEncoder,
        ),
        ModelEntry(
            "tree", "Tree network",
            "A recursive cell over a bracketing of the text: the graph is the parse tree.",
            TreeConfig, TreeNetwork,
        ),
    )
}


def entry(name: str) -> ModelEntry:
    if name not in ZOO:
        raise ConfigError(f"unknown model {name!r}; models are: {', '.join(ZOO)}")
    return ZOO[name]


def make_config(name: str, values: Mapping[str, Any] | None = None) -> Any:
    return build_config(entry(name).config_cls, values)


def build_model(name: str, config: Any) -> nn.Module:
    """The model with deterministic random weights for `config.seed`, in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = entry(name).model_cls(config)
    return model.eval()


__all__ = ["ZOO", "ConfigError", "Knob", "ModelEntry", "build_model", "entry", "make_config"]
