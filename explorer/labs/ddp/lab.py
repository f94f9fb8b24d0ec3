"""The multi-process lab, end to end: the person's choice checked before any process starts, then the scenario in
the distributed worker (explorer/labs/ddp/job.py)."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.compile.options import BACKENDS
from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.labs.ddp.job import DdpJob
from explorer.labs.ddp.registry import SCENARIOS
from explorer.labs.ddp.results import DdpResult
from explorer.labs.ddp.scenario import Setup
from explorer.labs.ddp.world import max_world_size
from explorer.sources.registry import check_architecture, make_config
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import WorkerFailure
from models.config import config_dict

MIN_STEPS, MAX_STEPS = 2, 20


def ddp_setup(scenario: str, model: str, config: object, world_size: int, steps: int = 6,
              backend: str = "aot_eager") -> Setup:
    """The user's choice checked before any process starts; a clear message for each thing out of range."""
    if scenario not in SCENARIOS:
        raise InputError(f"unknown scenario {scenario!r}; scenarios are: {', '.join(SCENARIOS)}")
    allowed = SCENARIOS[scenario].models
    if model not in allowed:
        raise InputError(f"the {scenario} scenario runs on {' or '.join(allowed)}, not {model}: "
                         f"{SCENARIOS[scenario].summary}")
    if not 2 <= world_size <= max_world_size():
        raise InputError(f"the number of processes must be 2..{max_world_size()} (one per core this app may use); "
                         f"got {world_size}")
    if not MIN_STEPS <= steps <= MAX_STEPS:
        raise InputError(f"steps must be {MIN_STEPS}..{MAX_STEPS}; got {steps}")
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    check_architecture(model, config)
    return Setup(model, config_dict(config), world_size, steps, backend)


def model_for(scenario: str, model: str | None, config: object | None) -> tuple[str, object, str]:
    """The Playground's model and architecture when the scenario runs on it, else the scenario's first model at
    its default architecture; with a note saying which."""
    if scenario not in SCENARIOS:
        raise InputError(f"unknown scenario {scenario!r}; scenarios are: {', '.join(SCENARIOS)}")
    allowed = SCENARIOS[scenario].models
    if model in allowed and config is not None:
        return model, config, f"the Playground's {model} and its architecture"
    why = f"the Playground's {model} is not one of them" if model else "no Playground run yet"
    return allowed[0], make_config(allowed[0]), (f"{allowed[0]} at its default architecture (this scenario runs on "
                                                 f"{' or '.join(allowed)}; {why})")


def run_ddp(service: WorkerProcess, scenario: str, setup: Setup) -> Iterator[Progress | DdpResult]:
    """Progress messages while the scenario's runs go, then the result. A scenario past the worker's timeout
    (or one that killed it) is an InputError saying so; the worker is replaced."""
    try:
        for item in service.run(DdpJob(scenario, setup)):
            if isinstance(item, Progress):
                yield Progress(item.elapsed_s, f"{SCENARIOS[scenario].title}: {item.phase}")
            else:
                yield item
    except WorkerFailure as e:
        raise InputError(str(e)) from None
