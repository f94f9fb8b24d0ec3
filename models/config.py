"""Knobs: config dataclass fields that carry their own type, range and help text.

A model's config dataclass is the single source of truth for its architecture, and a lab's parameters dataclass
for what a person sets in that lab. Each field is declared with `knob(...)`, so the UI controls, the CLI options,
the HTTP endpoint's parameters and the validation are all generated from the same declaration.
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
    # "int" | "float" | "bool" | "choice" | "text" | "ints" (whole numbers, each in min..max) | "subset" (of choices;
    # none given means all)
    type: str
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    step: float | None = None
    most: int | None = None  # "text": characters; "ints": how many numbers
    flag: str | None = None  # the CLI option, where it is not --<name with dashes> (kept for scripts that use it)
    file: bool | None = None  # True: "text" read from a file on the command line (--lines FILE)
    switch: str | None = None  # "choice" with an off value "": a CLI flag that turns it on (its first other choice)
    titles: tuple[str, ...] | None = None  # "choice"/"subset": how each choice is shown in the UI, in order

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
    most: int | None = None,
    flag: str | None = None,
    file: bool = False,
    switch: str | None = None,
    titles: tuple[str, ...] | None = None,
) -> Any:
    """A dataclass field with the metadata that makes it a knob."""
    meta = {"help": help, "min": min, "max": max, "choices": choices, "step": step, "most": most, "flag": flag,
            "file": file, "switch": switch,
            "titles": titles}
    return dataclasses.field(default=default, metadata=meta)


_TYPES = {int: "int", float: "float", bool: "bool", str: "text", tuple[int, ...]: "ints", tuple[str, ...]: "subset"}


def knobs(config_cls: type) -> list[Knob]:
    """The knobs of a config dataclass, in declaration order."""
    hints = typing.get_type_hints(config_cls)
    out = []
    for f in dataclasses.fields(config_cls):
        meta = f.metadata
        hint = hints[f.name]
        kind = _TYPES[hint]
        if kind == "text" and meta.get("choices"):
            kind = "choice"
        if kind == "ints" and meta.get("most") is None:  # its refusal names the bound: there must be one
            raise ValueError(f"{config_cls.__name__}.{f.name}: a knob of numbers declares how many it takes (most=)")
        out.append(Knob(name=f.name, type=kind, default=f.default, help=meta["help"],
                        **{k: meta.get(k) for k in ("min", "max", "choices", "step", "most", "flag", "switch",
                                                    "titles")},
                        file=meta.get("file") or None))
    return out


ECHO_CHARS = 80  # a refused value is quoted back at most this long


def echoed(value: Any) -> str:
    """A value a person gave, quoted back in a message: its repr, cut to ECHO_CHARS."""
    text = repr(value)
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS - 1] + "…"


def _items(k: Knob, value: Any) -> list[Any]:
    """A list knob's items: from a list, or from a comma-separated string (the CLI's and the HTTP API's form)."""
    if isinstance(value, str):
        return [x.strip() for x in value.split(",") if x.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise ConfigError(f"{k.name} must be a comma-separated list; got {type(value).__name__}")


def _coerce(k: Knob, value: Any) -> Any:
    """Convert one user value (possibly a string from the CLI) to the knob's type, or raise."""
    if k.type == "choice":
        if not isinstance(value, str) or value not in k.choices:
            shown = ", ".join(repr(c) if c == "" else c for c in k.choices)
            raise ConfigError(f"{k.name} must be one of {shown}; got {echoed(value)}")
        return value
    if k.type == "text":
        if not isinstance(value, str):
            raise ConfigError(f"{k.name} must be text; got {type(value).__name__}")
        if k.most is not None and len(value) > k.most:
            raise ConfigError(f"{k.name} is {len(value):,} characters; the limit is {k.most:,}")
        return value
    if k.type == "subset":
        chosen = list(dict.fromkeys(_items(k, value)))  # each once, in the order given
        unknown = [c for c in chosen if c not in k.choices]
        if unknown:
            raise ConfigError(f"{k.name}: unknown {echoed(unknown[0])}; choose from {', '.join(k.choices)}")
        return tuple(chosen) or tuple(k.choices)
    if k.type == "ints":
        items = _items(k, value)
        if len(items) > 4 * (k.most or 8):  # before any conversion: a list is never that long
            raise ConfigError(f"{k.name} takes at most {k.most} numbers; got {len(items)}")
        whole = _whole(k)
        numbers = tuple(dict.fromkeys(_coerce(whole, x) for x in items))  # each once
        if k.most is not None and len(numbers) > k.most:
            raise ConfigError(f"{k.name} takes at most {k.most} numbers; got {len(numbers)}")
        return numbers
    if k.type == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{k.name} must be true or false; got {echoed(value)}")
    if isinstance(value, bool):
        raise ConfigError(f"{k.name} must be a number; got {echoed(value)}")
    if isinstance(value, str):
        text = value.strip()
        try:  # whole digits stay exact: "1" * 400 is out of range, not infinite
            value = int(text) if text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise ConfigError(f"{k.name} must be a number; got {echoed(value)}") from None
    if not isinstance(value, (int, float)):
        raise ConfigError(f"{k.name} must be a number; got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{k.name} must be a finite number; got {value!r}")
    if k.type == "int":
        if value != int(value):
            raise ConfigError(f"{k.name} must be a whole number; got {echoed(value)}")
        value = int(value)
    else:
        value = float(value)
    if (k.min is not None and value < k.min) or (k.max is not None and value > k.max):
        got = f"{value:g}" if isinstance(value, float) or abs(value) < 10**15 else echoed(value)
        raise ConfigError(f"{k.name} must be between {k.min:g} and {k.max:g}; got {got}")
    return value


def _whole(k: Knob) -> Knob:
    """One item of an "ints" knob, checked like an "int" knob of the same range."""
    return dataclasses.replace(k, type="int", name=f"each of {k.name}")


def build_config(config_cls: type, values: Mapping[str, Any] | None = None, what: str = "config field") -> Any:
    """A validated config from defaults overridden by `values`; unknown keys are errors."""
    values = dict(values or {})
    by_name = {k.name: k for k in knobs(config_cls)}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise ConfigError(
            f"unknown {what} {echoed(unknown[0])} for {config_cls.__name__}; "
            f"fields are: {', '.join(by_name)}"
        )
    coerced = {name: _coerce(by_name[name], v) for name, v in values.items()}
    return config_cls(**coerced)


def config_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)
