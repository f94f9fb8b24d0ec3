"""The multi-process lab: several training processes joined by torch.distributed (gloo, loopback) with
DistributedDataParallel around a model, in scenarios that show what dynamic graphs do to DDP."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.compile.options import BACKENDS
from explorer.core.progress import Progress
from explorer.labs.contract import LabContext, LabSpec, Needs, Work
from explorer.labs.ddp.job import WORKER
from explorer.labs.ddp.lab import MAX_STEPS, MIN_STEPS, ddp_setup, model_for, run_ddp
from explorer.labs.ddp.registry import SCENARIOS
from explorer.labs.ddp.results import DdpResult
from explorer.labs.ddp.view import OUTPUTS, DdpOutcome, format_ddp, view_of
from explorer.labs.ddp.world import max_world_size
from explorer.sources.contract import Subject
from models.config import knob


@dataclass(frozen=True)
class DdpParams:
    scenario: str = knob("unused", "; ".join(f"{s.title}: {s.summary} ({', '.join(s.models)})"
                                             for s in SCENARIOS.values()),
                         choices=tuple(SCENARIOS), titles=tuple(s.title for s in SCENARIOS.values()))
    world_size: int = knob(2, f"processes, one per core this server may use ({max_world_size()})", min=2,
                           max=max(2, max_world_size()))
    steps: int = knob(6, "training steps per phase", min=MIN_STEPS, max=MAX_STEPS)
    backend: str = knob("aot_eager", "the compiled scenario's backend (inductor compiles C++ in every rank: minutes)",
                        choices=BACKENDS)


def run(subject: Subject | None, p: DdpParams, ctx: LabContext) -> Iterator[Progress | DdpOutcome]:
    """The scenario in the distributed worker: on the model named, or, from the Playground, on its model if the
    scenario takes it and on the scenario's own otherwise (said in the view)."""
    if subject is None or subject.playground:
        model, config, which = model_for(p.scenario, subject.model if subject else None,
                                         subject.config if subject else None)
    else:
        model, config, which = subject.model, subject.config, f"{subject.arch}, as asked"
    setup = ddp_setup(p.scenario, model, config, p.world_size, p.steps, p.backend)
    for item in run_ddp(ctx.workers[WORKER.name], p.scenario, setup):
        yield item if not isinstance(item, DdpResult) else DdpOutcome(item, which)


def work(p: DdpParams) -> Work:
    return Work(p.world_size * p.steps, f"{p.world_size} processes x {p.steps} steps", "max_rank_steps")


SPEC = LabSpec(
    name="ddp", title="Multi-process lab",
    summary="train in several processes with DistributedDataParallel (gloo, loopback)",
    intro="Several training processes on this machine, joined by `torch.distributed` (gloo, loopback), with "
          "DistributedDataParallel around **the Playground's model** (or the scenario's own, said in the status). "
          "Each scenario reproduces what dynamic graphs do to DDP, for real: the error each rank meets, the signal "
          "that kills one, and per rank, step by step, the time computing, communicating and **waiting**. One run "
          "at a time on the whole server: the processes take every core, and the Playground's timings wait for them.",
    button="Run the scenario", params=DdpParams, needs=Needs.ANY_MODEL, run=run, view=view_of, outputs=OUTPUTS,
    text=format_ddp, worker=WORKER, model_at=1, work=work)
