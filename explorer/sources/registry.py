"""Every model source, by name: the zoo's models, the `transformers` architectures (explorer/sources/library.py),
and the operator's own files (`GE_MODELS`, the CLI's `--model
path.py`: explorer/sources/userfile.py), which every process the app spawns loads too."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from torch import nn

from explorer.core.budget import gib
from explorer.core.errors import InputError
from explorer.core.limits import MAX_ACTIVATION_BYTES, MAX_PARAMS, MAX_TOKENS
from explorer.sources import userfile
from explorer.sources.contract import ModelSource, Subject
from explorer.sources.library import library_sources
from explorer.sources.zoo import zoo_sources
from models import ConfigError
from models.config import echoed

SOURCES: dict[str, ModelSource] = {s.name: s for s in [*zoo_sources(), *library_sources()]}
MODELS_ENV = "GE_MODELS"  # the operator's model files, comma-separated: handed down to every spawned process


def add_model_file(spec: str) -> str:
    """Load `spec` (explorer/sources/userfile.py) as a model source; returns its name. Only ever what the operator
    named, never a request's value."""
    model = userfile.load(spec)
    SOURCES[model.name] = model
    listed = [s for s in os.environ.get(MODELS_ENV, "").split(",") if s]
    if spec not in listed:
        os.environ[MODELS_ENV] = ",".join([*listed, spec])
    return model.name


def _operators_files() -> None:
    for spec in [s for s in os.environ.get(MODELS_ENV, "").split(",") if s.strip()]:
        try:
            add_model_file(spec.strip())
        except InputError as e:
            print(f"{MODELS_ENV}: {e}", file=sys.stderr)
            raise SystemExit(2) from None


def source(name: str) -> ModelSource:
    if not isinstance(name, str) or name not in SOURCES:
        raise ConfigError(f"unknown model {echoed(name)}; models are: {', '.join(SOURCES)}")
    return SOURCES[name]


def subject(model: str, values: Mapping[str, Any] | None = None, text: str = "") -> Subject:
    """The model a person chose with their config values, checked against the server's size limits before anything
    is built."""
    s = source(model)
    config = s.config(values)
    check_architecture(model, config)
    return Subject(s, config, text)


def make_config(model: str, values: Mapping[str, Any] | None = None) -> Any:
    """`model`'s config from its defaults and `values`, validated."""
    return source(model).config(values)


def build_model(model: str, config: Any) -> nn.Module:
    """`model` with deterministic weights for `config`, in eval mode."""
    return source(model).build(config)


def check_architecture(model: str, config: Any) -> None:
    """Raise InputError if this architecture is over the parameter limit, or would be over the memory
    limit on an input of the maximum length."""
    params = source(model).param_count(config)
    if params > MAX_PARAMS:
        raise InputError(f"this architecture has {params:,} parameters; the limit is {MAX_PARAMS:,} "
                         "(GE_MAX_PARAMS). Make it narrower or shallower.")
    need = source(model).activation_bytes(config, MAX_TOKENS, 1)
    if need > MAX_ACTIVATION_BYTES:
        raise InputError(f"this architecture would keep ~{gib(need)} of activations for backward on one input of "
                         f"{MAX_TOKENS} tokens (the longest any run of this server takes); the limit is "
                         f"{gib(MAX_ACTIVATION_BYTES)} (GE_MAX_ACTIVATION_BYTES). Use fewer layers, heads or a "
                         "smaller width.")


def warm_param_count() -> None:
    """Pay the meta device's one-time set-up (importing torch's reference ops, seconds) ahead of the first
    architecture change."""
    s = source("rnn")
    s.param_count(s.config())


def batch_activation_bytes(model: nn.Module, shapes: Iterable[tuple[int, int]]) -> int:
    """Estimated bytes saved for backward by one train step of `model` over padded calls of these (batch, tokens)."""
    s = next(s for s in SOURCES.values() if s.builds(model))
    return sum(s.activation_bytes(model.cfg, tokens, batch) for batch, tokens in shapes)


_operators_files()
