"""Every model source, by name: the zoo's models today."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from explorer.core.budget import check_architecture
from explorer.sources.contract import ModelSource, Subject
from explorer.sources.zoo import zoo_sources
from models import ConfigError

SOURCES: dict[str, ModelSource] = {s.name: s for s in zoo_sources()}


def source(name: str) -> ModelSource:
    if not isinstance(name, str) or name not in SOURCES:
        shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:79] + "…"
        raise ConfigError(f"unknown model {shown}; models are: {', '.join(SOURCES)}")
    return SOURCES[name]


def subject(model: str, values: Mapping[str, Any] | None = None, text: str = "") -> Subject:
    """The model a person chose with their config values, checked against the server's size limits before anything
    is built."""
    s = source(model)
    config = s.config(values)
    check_architecture(model, config)
    return Subject(s, config, text)
