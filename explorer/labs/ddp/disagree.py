"""Scenario 3, ranks that disagree on control flow: a branch taken on one rank's data runs a collective the other
ranks never call.

The branch is an ordinary one: "for a long input, all-reduce a statistic" (monitoring, say). Rank 0 gets a short
sentence, the others long ones. Three runs: the branch outside DDP (the collective hangs until the process
group's timeout while the other rank carries on), the same branch inside DDP training (the stray all-reduce pairs
with the other rank's gradient all-reduce: gloo aborts the process, no Python exception), and the fix (every rank
all-reduces the decision first, then all take the branch together)."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from explorer.core.batches import sentence
from explorer.labs.ddp.results import ALLREDUCE, FORWARD, STALLED, Cost, WorldRun
from explorer.labs.ddp.scenario import HANG_TIMEOUT_S, Conclusion, Launch, Scenario, Setup, costs
from explorer.labs.ddp.training import Trainer, build
from explorer.labs.ddp.world import RankContext
from models.tokenizer import encode

SHORT, LONG = 12, 96
LONG_FROM = 48  # the branch: inputs longer than this log a statistic across ranks
MODES = ("alone", "in DDP", "decided together")


def rank_input(rank: int) -> torch.Tensor:
    return torch.tensor([encode(sentence(SHORT if rank == 0 else LONG, rank))])


def _collective(ctx: RankContext, tensor: torch.Tensor, op: dist.ReduceOp = dist.ReduceOp.SUM) -> None:
    """An all-reduce, recorded; one that fails is drawn as the time it stalled."""
    start = time.perf_counter()
    try:
        dist.all_reduce(tensor, op=op)
    except RuntimeError:
        ctx.record(STALLED, start)
        raise
    ctx.record(ALLREDUCE, start)


def _disagree_rank(ctx: RankContext, model: str, config: dict, steps: int, mode: str) -> None:
    ids = rank_input(ctx.rank)
    net = build(model, config)
    trainer = Trainer.make(ctx, net) if mode != "alone" else None
    for i in range(steps):
        ctx.step += 1
        ctx.phase(f"step {i + 1}/{steps}")
        if trainer is None:
            start = time.perf_counter()
            with torch.no_grad():
                logits = net(ids)
            ctx.record(FORWARD, start)
            if ids.shape[1] > LONG_FROM:  # only the ranks with long inputs take the branch
                _collective(ctx, logits.detach().abs().mean().reshape(1))
            continue

        def loss(logits: torch.Tensor) -> torch.Tensor:
            take = torch.tensor([float(ids.shape[1] > LONG_FROM)])
            if mode == "decided together":  # one more all-reduce: every rank learns whether any rank branches
                _collective(ctx, take, dist.ReduceOp.MAX)
            if take.item():
                _collective(ctx, logits.detach().abs().mean().reshape(1))
            return logits.logsumexp(-1).sum()

        ctx.report.values.setdefault("step ms", []).append(trainer.step((ids,), loss))


def launches(setup: Setup) -> list[Launch]:
    args = (setup.model, setup.config, setup.steps)
    return [Launch(f"the branch outside DDP (process-group timeout {HANG_TIMEOUT_S:g} s)", _disagree_rank,
                   (*args, "alone"), pg_timeout_s=HANG_TIMEOUT_S),
            Launch("the same branch inside DDP training", _disagree_rank, (*args, "in DDP")),
            Launch("the fix: all-reduce the decision, then branch together", _disagree_rank,
                   (*args, "decided together"))]


def conclude(setup: Setup, runs: list[WorldRun]) -> Conclusion:
    alone, in_ddp, fixed = runs
    stalled = [s / 1e3 for s in alone.kind_ms(STALLED)]
    rows = [Cost.of("outside DDP: time until the stray all-reduce failed", [s * 1e3 for s in stalled],
                    f"process-group timeout {HANG_TIMEOUT_S:g} s"),
            Cost.of("decided together: step", fixed.slowest("step ms")),
            Cost.of("decided together: the all-reduce of the decision", _decision_ms(fixed),
                    "it waits for the slowest rank's forward: the decision is a sync point")]
    verdict = (f"**Outside DDP**: {alone.ending()}. **Inside DDP**: {in_ddp.ending()}. **Decided together**: "
               f"{fixed.ending()}.")
    return Conclusion(costs(*rows), verdict)


def _decision_ms(run: WorldRun) -> list[float]:
    """The first all-reduce recorded in each step (the decision's) on every rank."""
    out = []
    for r in run.ranks:
        if r.report is None:
            continue
        seen: set[int] = set()
        for s in r.report.segments:
            if s.kind == ALLREDUCE and s.step not in seen and s.end_s - s.start_s < 1.0:
                seen.add(s.step)
                out.append(s.ms)
    return out


SCENARIO = Scenario(
    "disagree", "Ranks that disagree on control flow",
    "One rank's data takes a branch with a collective in it: a hang until the timeout, or inside DDP an abort; then "
    "the fix, deciding together.",
    ("rnn", "transformer"), launches, conclude)  # early exit's unused heads would fail DDP first
