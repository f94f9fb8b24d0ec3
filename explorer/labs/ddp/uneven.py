"""Scenario 4, uneven inputs: rank r holds 3 + 2r batches (variable-length data rarely splits evenly).

Without care, the rank that still has data runs its next step's gradient all-reduce alone and hangs until the
process group's timeout. With `torch.distributed.algorithms.Join`, a rank that runs out shadows the others'
all-reduces (with zeros) until every rank is done."""

from __future__ import annotations

import time

import torch
from torch.distributed.algorithms import Join

from explorer.core.batches import sentence
from explorer.labs.ddp.results import WAIT, Cost, WorldRun
from explorer.labs.ddp.scenario import HANG_TIMEOUT_S, Conclusion, Launch, Scenario, Setup, costs
from explorer.labs.ddp.training import Trainer, build
from explorer.labs.ddp.world import RankContext
from models.tokenizer import encode

BASE, EXTRA = 3, 2


def batches(rank: int) -> list[torch.Tensor]:
    return [torch.tensor([encode(sentence(16 + 8 * i, rank * 100 + i))]) for i in range(BASE + EXTRA * rank)]


def _uneven_rank(ctx: RankContext, model: str, config: dict, join: bool) -> None:
    trainer = Trainer.make(ctx, build(model, config))
    mine = batches(ctx.rank)
    v = ctx.report.values
    v["batches"] = len(mine)

    def train() -> None:
        for i, ids in enumerate(mine):
            ctx.step += 1
            ctx.phase(f"batch {i + 1}/{len(mine)}")
            trainer.step((ids,))
            v["steps done"] = ctx.step

    if not join:
        train()
        return
    with Join([trainer.ddp]):
        train()
        ctx.phase("joined: shadowing the others' all-reduces")
        ctx.step += 1
        start = time.perf_counter()
    ctx.record(WAIT, start)  # from running out of data to every rank being done
    v["shadowed ms"] = (time.perf_counter() - start) * 1e3


def launches(setup: Setup) -> list[Launch]:
    args = (setup.model, setup.config)
    return [Launch(f"rank r holds {BASE} + {EXTRA}r batches, no Join (process-group timeout {HANG_TIMEOUT_S:g} s)",
                   _uneven_rank, (*args, False), pg_timeout_s=HANG_TIMEOUT_S),
            Launch("the same, inside torch.distributed.algorithms.Join", _uneven_rank, (*args, True))]


def conclude(setup: Setup, runs: list[WorldRun]) -> Conclusion:
    plain, joined = runs
    most = max(len(batches(r)) for r in range(setup.world_size))
    shadow = [r.report.values["shadowed ms"] for r in joined.ranks
              if r.report and "shadowed ms" in r.report.values and r.report.values["batches"] < most]
    rows = [Cost.of("no Join: wall time of the run", [plain.wall_s * 1e3], "processes started to all ended"),
            Cost.of("Join: wall time of the run", [joined.wall_s * 1e3], "processes started to all ended"),
            Cost.of("Join: a rank's time shadowing the others after its data ran out", shadow)]
    verdict = f"**Without Join**: {plain.ending()}. **With Join**: {joined.ending()}."
    return Conclusion(costs(*rows), verdict)


SCENARIO = Scenario(
    "uneven", "Uneven inputs",
    "One rank runs out of data first: without Join the other hangs until the timeout; with Join both finish.",
    ("rnn", "transformer"), launches, conclude)
