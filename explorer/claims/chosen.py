"""The models a claim's experiment runs on: the zoo's it names by default, or one a person chose (the Playground's),
where the experiment runs model by model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from explorer.workers.protocol import Workers


@dataclass(frozen=True)
class Chosen:
    """A model a person chose to re-run a claim's experiment on (the Playground's): its name and config values."""

    name: str
    values: dict[str, Any] = field(default_factory=dict)
    arch: str = ""  # its label, "gpt2 layers=4", once checked


def by_model(run: Callable[[Workers, list[Chosen]], Iterator[Any]], zoo: tuple[str, ...],
             quick: tuple[str, ...]) -> dict[str, Callable[..., Iterator[Any]]]:
    """A claim's `measure` (on the `zoo` models, or the `quick` ones in a quick run) and `on_model` (on one chosen
    model), from the one experiment that runs model by model."""
    return {"measure": lambda w: run(w, [Chosen(m) for m in (quick if w.quick else zoo)]),
            "on_model": lambda w, model: run(w, [model])}
