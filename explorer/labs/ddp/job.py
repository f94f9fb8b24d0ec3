"""The multi-process lab's job: a scenario's world runs, one after another, in the distributed worker (a worker
of its own, with its own timeout: a scenario can take minutes, and must never hold up the Playground's compiles).

The worker holds every measuring core of the app for the whole scenario: the ranks take every core, so no other
figure is timed meanwhile, and none of theirs is bent by one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.compile.options import BACKENDS
from explorer.compile.protocol import CompileFailure, Job, WorkerContext
from explorer.compile.worker import CompileService
from explorer.core.errors import InputError
from explorer.core.limits import DDP_RUN_S, DDP_TIMEOUT_S, WORKER_JOBS
from explorer.core.progress import Progress
from explorer.eager import timing
from explorer.labs.ddp.registry import SCENARIOS
from explorer.labs.ddp.results import DdpResult
from explorer.labs.ddp.scenario import Setup
from explorer.labs.ddp.world import launch, max_world_size
from explorer.sources.registry import check_architecture, make_config
from models.config import config_dict

MIN_STEPS, MAX_STEPS = 2, 20


@dataclass(frozen=True)
class DdpJob(Job[DdpResult]):
    scenario: str
    setup: Setup

    def run(self, ctx: WorkerContext) -> DdpResult:
        scenario = SCENARIOS[self.scenario]
        launches = scenario.launches(self.setup)
        runs = []
        with timing.exclusive():
            for i, item in enumerate(launches):
                said = f"run {i + 1}/{len(launches)}, {item.label}"
                ctx.phase(said)
                runs.append(launch(item.label, item.fn, item.args, self.setup.world_size, item.pg_timeout_s,
                                   DDP_RUN_S, item.env, on_phase=_Phases(ctx, said)))
        end = scenario.conclude(self.setup, runs)
        s = self.setup
        return DdpResult(self.scenario, s.model, s.config, s.world_size, runs, end.costs, end.verdict)


class _Phases:
    """Passes the ranks' progress on to the app when it changes (the launcher polls four times a second)."""

    def __init__(self, ctx: WorkerContext, prefix: str) -> None:
        self.ctx, self.prefix, self.last = ctx, prefix, ""

    def __call__(self, text: str) -> None:
        if text != self.last:
            self.ctx.phase(f"{self.prefix}: {text}")
            self.last = text


_service: CompileService | None = None


def ddp_service() -> CompileService:
    """The process-wide distributed worker, started on first use. One scenario at a time, server-wide."""
    global _service
    if _service is None:
        _service = CompileService(DDP_TIMEOUT_S, name="distributed run",
                                  advice="Try fewer processes, a smaller architecture, or another scenario.",
                                  starts_processes=True, max_jobs=int(WORKER_JOBS))
    return _service


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


def run_ddp(service: CompileService, scenario: str, setup: Setup) -> Iterator[Progress | DdpResult]:
    """Progress messages while the scenario's runs go, then the result. A scenario past the worker's timeout
    (or one that killed it) is an InputError saying so; the worker is replaced."""
    try:
        for item in service.run(DdpJob(scenario, setup)):
            if isinstance(item, Progress):
                yield Progress(item.elapsed_s, f"{SCENARIOS[scenario].title}: {item.phase}")
            else:
                yield item
    except CompileFailure as e:
        raise InputError(str(e)) from None
