"""The zoo of dynamic models: pure torch, each built from a config dataclass."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from models import decoder, early_exit, rnn, transformer, tree
from models.config import ConfigError, Knob, build_config, config_dict, knobs
from models.decoder import Decoder, DecoderConfig
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
    # What the input decided, read off the module call counts of a run: {"unrolled steps": 42}.
    structure: Callable[[Mapping[str, int]], dict[str, int]]
    # Upper bound of the bytes a train step saves for backward: (config, tokens, batch) -> bytes.
    activation_bytes: Callable[[Any, int, int], int]
    # The input's decision as text, where the graph alone hardly shows it: (config, token ids) -> "((The cat) sat)".
    decision: Callable[[Any, list[int]], str] | None = None
    # (leaf module, composing module) of a model whose graph is a tree: call k of the leaf reads token k.
    tree: tuple[str, str] | None = None

    def knobs(self) -> list[Knob]:
        return knobs(self.config_cls)


def _count_children(calls: Mapping[str, int], container: str) -> int:
    """How many of a ModuleList's children ran at least once."""
    return sum(1 for k in calls if k.startswith(container + ".") and k.count(".") == 1)


ZOO: dict[str, ModelEntry] = {
    e.name: e
    for e in (
        ModelEntry(
            "rnn", "Unrolled RNN",
            "A Python loop over the tokens: one cell call per token, so the graph grows with the input.",
            RNNConfig, UnrolledRNN,
            # loop=scan runs the cell inside one scan op: no Python step to count (the card counts module calls)
            lambda calls: {"unrolled steps per layer": calls["layers.0.fwd"],
                           "cell calls": sum(n for k, n in calls.items() if k.startswith("layers."))}
            if calls.get("layers.0.fwd") else {},
            rnn.activation_bytes,
        ),
        ModelEntry(
            "transformer", "Transformer encoder",
            "Self-attention over exactly the tokens given: the graph's size is fixed, its shapes grow.",
            TransformerConfig, TransformerEncoder,
            lambda calls: {"blocks run": _count_children(calls, "blocks")},
            transformer.activation_bytes,
        ),
        ModelEntry(
            "early_exit", "Early exit",
            "Blocks with a confidence head after each: it stops once confident, so depth depends on the input.",
            EarlyExitConfig, EarlyExitEncoder,
            lambda calls: {"blocks run": _count_children(calls, "blocks")},
            early_exit.activation_bytes,
        ),
        ModelEntry(
            "tree", "Tree network",
            "A recursive cell over a bracketing of the text: the graph is the parse tree.",
            TreeConfig, TreeNetwork,
            lambda calls: {"tree leaves": calls.get("leaf", 0), "compositions": calls.get("compose", 0)},
            tree.activation_bytes, tree.bracketing_text, ("leaf", "compose"),
        ),
        ModelEntry(
            "decoder", "Decoder (generates)",
            "A causal transformer with a key/value cache: it generates bytes, one forward per new token.",
            DecoderConfig, Decoder,
            lambda calls: {"blocks run": _count_children(calls, "blocks")},
            decoder.activation_bytes,
        ),
    )
}


def entry(name: str) -> ModelEntry:
    if name not in ZOO:
        raise ConfigError(f"unknown model {name!r}; models are: {', '.join(ZOO)}")
    return ZOO[name]


def make_config(name: str, values: Mapping[str, Any] | None = None) -> Any:
    return build_config(entry(name).config_cls, values)


def arch_label(model: str, config: Any) -> str:
    """Only the fields that differ from the defaults: "rnn", "rnn layers=2 cell=lstm"."""
    defaults = config_dict(type(config)())  # every field of a config has its default (any model source's too)
    changed = [f"{k}={v}" for k, v in config_dict(config).items() if defaults[k] != v]
    return " ".join([model, *changed])


@functools.lru_cache(maxsize=1024)  # every architecture change checks it; a class returns to the same few
def param_count(name: str, config: Any) -> int:
    """Parameters of the model for `config`, counted on the meta device (no memory, no init cost)."""
    with torch.device("meta"):
        return sum(p.numel() for p in entry(name).model_cls(config).parameters())


def build_model(name: str, config: Any) -> nn.Module:
    """The model with deterministic random weights for `config.seed`, in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = entry(name).model_cls(config)
    return model.eval()


__all__ = ["ZOO", "ConfigError", "Knob", "ModelEntry", "arch_label", "build_model", "entry", "make_config",
           "param_count"]
