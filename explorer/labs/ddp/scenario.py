"""What a scenario is: which models it takes, the world runs it makes (each a fresh set of processes), and how its
costs and verdict are read off what the ranks measured. Each scenario lives in its own module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from explorer.labs.ddp.results import Cost, WorldRun
from explorer.labs.ddp.world import RankFn

PG_TIMEOUT_S = 30.0  # every collective's limit (gloo's default is 30 minutes)
HANG_TIMEOUT_S = 5.0  # where a hang is the point: shown in seconds


@dataclass(frozen=True)
class Setup:
    """What the user chose: the Playground's model and architecture, and the number of processes."""

    model: str
    config: dict[str, Any]
    world_size: int
    steps: int = 6
    backend: str = "aot_eager"  # the compiled scenario's (inductor compiles C++ in every rank: minutes)


@dataclass(frozen=True)
class Launch:
    """One world run: `fn(ctx, *args)` on every rank, with extra environment for the ranks."""

    label: str
    fn: RankFn
    args: tuple[Any, ...]
    env: dict[str, str] = field(default_factory=dict)
    pg_timeout_s: float = PG_TIMEOUT_S


@dataclass(frozen=True)
class Conclusion:
    costs: list[Cost]
    verdict: str


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    summary: str
    models: tuple[str, ...]
    launches: Callable[[Setup], list[Launch]]
    conclude: Callable[[Setup, list[WorldRun]], Conclusion]


def costs(*rows: Cost | None) -> list[Cost]:
    """The rows that were measured (a run that failed measures nothing)."""
    return [r for r in rows if r is not None]
