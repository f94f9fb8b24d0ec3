"""Architecture knobs: config dataclass fields that carry their own range and help text.

A model's config dataclass is the single source of truth for its architecture. Each field is
declared with `knob(...)`, so the UI controls, the CLI listing and the validation are all
generated from the same declaration.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """A config value the user gave is unknown, of the wrong type or out of range."""


@dataclass(frozen=True)
class Knob:
    """The public description of one config field."""

    name: str
    type: str  # "int" | "float" | "bool" | "choice"
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    step: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def knob(
    default: Any,
    help: str,
    *,
    min: float | None = None,
    max: float | None = None,
    choices: tuple[str, ...] | None = None,
    step: float | None = None,
) -> Any:
    """A dataclass field with the metadata that makes it a knob."""
    meta = {"help": help, "min": min, "max": max, "choices": choices, "step": step}
    return dataclasses.field(default=default, metadata=meta)


def knobs(config_cls: type) -> list[Knob]:
    """The knobs of a config dataclass, in declaration order."""
    hints = typing.get_type_hints(config_cls)
    out = []
    for f in dataclasses.fields(config_cls):
        meta = f.metadata
        hint = hints[f.name]
        kind = "choice" if meta.get("choices") else {int: "int", float: "float", bool: "bool"}[hint]
        out.append(
            Knob(
                name=f.name,
                type=kind,
                default=f.default,
                help=meta["help"],
                min=meta.get("min"),
                max=meta.get("max"),
                choices=meta.get("choices"),
                step=meta.get("step"),
            )
        )
    return out


def _coerce(k: Knob, value: Any) -> Any:
    """Convert one user value (possibly a string from the CLI) to the knob's type, or raise."""
    if k.type == "choice":
        if not isinstance(value, str) or value not in k.choices:
            raise ConfigError(f"{k.name} must be one of {', '.join(k.choices)}; got {value!r}")
        return value
    if k.type == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{k.name} must be true or false; got {value!r}")
    if isinstance(value, bool):
        raise ConfigError(f"{k.name} must be a number; got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ConfigError(f"{k.name} must be a number; got {value!r}") from None
    if not isinstance(value, (int, float)):
        raise ConfigError(f"{k.name} must be a number; got {type(value).__name__}")
    if not math.isfinite(value):
        raise ConfigError(f"{k.name} must be a finite number; got {value!r}")
    if k.type == "int":
        if value != int(value):
            raise ConfigError(f"{k.name} must be a whole number; got {value!r}")
        value = int(value)
    else:
        value = float(value)
    if (k.min is not None and value < k.min) or (k.max is not None and value > k.max):
        raise ConfigError(f"{k.name} must be between {k.min:g} and {k.max:g}; got {value:g}")
    return value


def build_config(config_cls: type, values: Mapping[str, Any] | None = None) -> Any:
    """A validated config from defaults overridden by `values`; unknown keys are errors."""
    values = dict(values or {})
    by_name = {k.name: k for k in knobs(config_cls)}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise ConfigError(
            f"unknown config field {unknown[0]!r} for {config_cls.__name__}; "
            f"fields are: {', '.join(by_name)}"
        )
    coerced = {name: _coerce(by_name[name], v) for name, v in values.items()}
    return config_cls(**coerced)


def config_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)
