"""The multi-process lab's job: a scenario's world runs, one after another, in the distributed worker (a worker
of its own, with its own timeout: a scenario can take minutes, and must never hold up the Playground's compiles).

The worker holds every measuring core of the app for the whole scenario: the ranks take every core, so no other
figure is timed meanwhile, and none of theirs is bent by one."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.core.limits import DDP_RUN_S, DDP_TIMEOUT_S, WORKER_JOBS
from explorer.eager import timing
from explorer.labs.contract import OwnWorker
from explorer.labs.ddp.registry import SCENARIOS
from explorer.labs.ddp.results import DdpResult
from explorer.labs.ddp.scenario import Setup
from explorer.labs.ddp.world import launch
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import Job, WorkerContext


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


_service: WorkerProcess | None = None


def ddp_service() -> WorkerProcess:
    """The process-wide distributed worker, started on first use. One scenario at a time, server-wide."""
    global _service
    if _service is None:
        _service = WorkerProcess(DDP_TIMEOUT_S, name="distributed run",
                                  advice="Try fewer processes, a smaller architecture, or another scenario.",
                                  starts_processes=True, max_jobs=int(WORKER_JOBS))
    return _service


WORKER = OwnWorker("ddp", ddp_service)  # the lab's own worker (explorer/labs/contract.py)
