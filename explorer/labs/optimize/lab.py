"""The optimization lab, end to end: the planner's weights measured (the compiler's start, a static compile at the
shortest and longest request and the compiled forward's cost per token, in a fresh worker process as the strategies
get), the bucket plans, then each strategy serving the whole workload in a fresh worker process within its time bound
(one past it is stopped and reported as such)."""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterator
from dataclasses import replace
from typing import TypeVar

from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.core.workload import Workload
from explorer.labs.optimize.job import OPTIMIZE_TIMEOUT_S, ProbeJob, Served, ServeJob, optimize_service
from explorer.labs.optimize.planner import planned, powers_of_two
from explorer.labs.optimize.results import OptimizeResult
from explorer.labs.optimize.strategies import STRATEGIES
from explorer.workers.protocol import Job, WorkerFailure, Workers, run_said
from models.config import config_dict

T = TypeVar("T")


def run_optimize(workers: Workers, model: str, config: object, workload: Workload, strategies: list[str],
                 backend: str, bound_s: float) -> Iterator[Progress | OptimizeResult]:
    if unknown := [s for s in strategies if s not in STRATEGIES]:
        raise InputError(f"unknown strategy {unknown}; they are: {', '.join(STRATEGIES)}")
    if not strategies:
        raise InputError(f"name at least one strategy: {', '.join(STRATEGIES)}")
    values = config_dict(config)
    probe = ProbeJob(model, values, min(workload.lengths), max(workload.lengths), backend)
    # (its own bound: two compiles, whatever a strategy is given to serve the stream)
    costs = yield from _served(workers, OPTIMIZE_TIMEOUT_S, probe, "measuring the planner's weights")
    plans = {"planned": planned(workload.lengths, costs),
             "pow2": powers_of_two(workload.lengths)}
    result = OptimizeResult(model, values, workload, backend, costs, plans, fresh=workers.fresh)
    boundaries = {name: p.boundaries for name, p in plans.items()}
    for i, name in enumerate(strategies, 1):
        said = f"strategy {i} of {len(strategies)}, {name}"
        recorded = STRATEGIES[name].recorded
        profile = f"graph-explorer-optimize-{uuid.uuid4().hex}" if recorded == "profile" else ""
        job = ServeJob(model, values, workload.lengths, name, backend, boundaries, profile)
        try:
            served = yield from (_recorded if recorded else _served)(workers, bound_s, job, said)
        except WorkerFailure as e:  # past its time bound, or its worker died: said, and the next one runs
            served = Served(name, error=f"stopped: {e}")
        result.served.append(served)
        yield result  # the table so far, after each strategy


def _recorded(workers: Workers, bound_s: float, job: ServeJob, said: str) -> Generator[Progress, None, Served]:
    """A recording run in a process of its own, which leaves what the measured run (the next process) reads: the
    profile under the job's id, or the mega-cache it returns."""
    recording = yield from _served(workers, bound_s, replace(job, records=True),
                                   f"{said}, recording its {STRATEGIES[job.strategy].recorded}")
    if recording.skipped or recording.error:
        return replace(recording, error=recording.error and f"in its recording run: {recording.error}",
                       artifacts=b"")
    return (yield from _served(workers, bound_s, replace(job, artifacts=recording.artifacts), said))


def _served(workers: Workers, bound_s: float, job: Job[T], said: str) -> Generator[Progress, None, T]:
    """`job` in a fresh worker process within `bound_s` (in the compile worker where there is none)."""
    runner = optimize_service(bound_s) if workers.fresh else workers.compile
    try:
        return (yield from run_said(runner, job, said))
    finally:
        if runner is not workers.compile:
            runner.stop()
