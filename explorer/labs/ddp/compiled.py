"""Scenario 5, compiled DDP: `torch.compile` on a DDP model, with each rank's lengths its own.

Dynamo's DDPOptimizer splits the captured graph at DDP's bucket boundaries, so that gradients can still be
all-reduced while backward runs: the backend is handed one graph per split (counted here). Each rank compiles
for its own lengths, at its own steps: a rank that recompiles makes the others wait in the all-reduce. The same
steps run in eager DDP first, for the step-time comparison."""

from __future__ import annotations

import time

import torch
import torch._dynamo as dynamo
import torch.distributed as dist

from explorer.compile.observe import CountingBackend, frame_compiles
from explorer.core.batches import sentence
from explorer.core.limits import DDP_RUN_S
from explorer.eager.compare import MIN_PAIRS
from explorer.labs.ddp.results import COMPILE, FORWARD, WAIT, Cost, WorldRun
from explorer.labs.ddp.scenario import Conclusion, Launch, Scenario, Setup, costs
from explorer.labs.ddp.training import Trainer, build
from explorer.labs.ddp.world import RankContext
from models.tokenizer import encode

# Per rank, the lengths of its steps: rank 0 short and slowly varying, rank 1 long and alternating.
LENGTHS = ((16, 16, 24, 24, 32, 32), (64, 96, 64, 96, 64, 96))


def lengths(rank: int, steps: int) -> list[int]:
    own = LENGTHS[rank % len(LENGTHS)]
    return [own[i % len(own)] + 8 * (rank // len(LENGTHS)) for i in range(steps)]


def _compiled_rank(ctx: RankContext, model: str, config: dict, steps: int, backend: str) -> None:
    v = ctx.report.values
    inputs = [torch.tensor([encode(sentence(n, i))]) for i, n in enumerate(lengths(ctx.rank, steps))]
    # Buckets of a quarter of the gradient: DDP's default (25 MiB) holds these models whole, leaving DDPOptimizer
    # no boundary to split at. DDPOptimizer refuses a cap below DDP's first bucket (1 MiB): a smaller gradient is
    # one bucket, one graph. Both runs use the same buckets.
    grad_mib = sum(p.numel() * 4 for p in build(model, config).parameters()) / 2**20
    cap_mb = max(grad_mib / 4, dist._DEFAULT_FIRST_BUCKET_BYTES / 2**20)
    v["gradient MiB"], v["bucket cap MiB"] = grad_mib, cap_mb
    eager = Trainer.make(ctx, build(model, config), bucket_cap_mb=cap_mb)
    for i, ids in enumerate(inputs):
        ctx.step += 1
        ctx.phase(f"eager DDP, step {i + 1}/{steps}")
        v.setdefault("eager ms", []).append(eager.step((ids,)))
    dynamo.reset()
    # The app's compile worker keeps a profile of lengths seen (dynamo's local PGO) that the ranks would inherit:
    # each rank starts from nothing here, as a fresh training job would, so its recompiles are its own.
    dynamo.config.automatic_dynamic_local_pgo = False
    counter = CountingBackend(backend)
    compiled = Trainer.make(ctx, build(model, config), bucket_cap_mb=cap_mb)
    compiled.ddp = torch.compile(compiled.ddp, backend=counter)  # DDPOptimizer: a graph per bucket
    since = time.time()
    for i, ids in enumerate(inputs):
        ctx.step += 1
        ctx.phase(f"compiled DDP, step {i + 1}/{steps} (compiling: {len(frame_compiles(since))} so far)")
        before = counter.graphs
        ms = compiled.step((ids,))
        if counter.graphs > before:  # this step compiled, in its forward (AOTAutograd compiles backward then too)
            ctx.relabel(FORWARD, COMPILE)
            v.setdefault("compiled at step", []).append(i + 1)
        v.setdefault("compiled ms", []).append(ms)
    frames = frame_compiles(since)
    v["graphs"] = counter.graphs
    v["frame compiles"] = len(frames)
    v["compile s"] = sum(f.seconds for f in frames)


def launches(setup: Setup) -> list[Launch]:
    # A rank's compile stalls the others in the all-reduce for as long as it takes (the RNN's longer unrolls under
    # inductor: over 36 s for a quarter of its compiling steps, bench/RESULTS-ddp.md), so the group's timeout is the
    # run's own limit, not the usual 30 s.
    return [Launch(f"eager DDP, then torch.compile(DDP) with backend {setup.backend}; rank lengths "
                   f"{[sorted(set(lengths(r, setup.steps))) for r in range(setup.world_size)]}", _compiled_rank,
                   (setup.model, setup.config, setup.steps, setup.backend), pg_timeout_s=DDP_RUN_S)]


def conclude(setup: Setup, runs: list[WorldRun]) -> Conclusion:
    (run,) = runs
    compiling = sorted({s for r in run.ranks if r.report for s in r.report.values.get("compiled at step", [])})
    last = max(compiling, default=0)
    every = run.slowest("compiled ms", 0)
    rows = [Cost.of("eager DDP: step, after the last compile", run.slowest("eager ms", last)),
            Cost.of(f"compiled DDP ({setup.backend}): step, after the last compile",
                    run.slowest("compiled ms", last)),
            Cost.of("compiled DDP: the steps that compiled (on any rank)",
                    [every[s - 1] for s in compiling if s <= len(every)])]
    if not run.ok:
        return Conclusion(costs(*rows), f"The run did not complete: {run.ending()}.")
    per_rank = "; ".join(
        f"rank {r.rank}: {r.report.values['graphs']} graph(s) from {r.report.values['frame compiles']} frame "
        f"compile(s) ({r.report.values['compile s']:.1f} s), compiling at step(s) "
        f"{r.report.values.get('compiled at step', [])}" for r in run.ranks if r.report)
    v = run.ranks[0].report.values
    buckets = (f"Gradient {v['gradient MiB']:.2f} MiB in buckets of {v['bucket cap MiB']:.2f} MiB"
               + (" (DDPOptimizer splits no finer than DDP's 1 MiB first bucket: this gradient is one bucket, so no "
                  "split at a bucket boundary; a wider model splits)" if v["gradient MiB"] <= v["bucket cap MiB"]
                  else "") + ". ")
    eager, compiled = rows[0], rows[1]
    speed = (f" After the last compile: compiled {compiled.median_ms:.0f} ms against eager {eager.median_ms:.0f} ms "
             f"per step, medians of {compiled.samples} and {eager.samples} step(s) of the slowest rank"
             + (" (too few to compare)" if min(compiled.samples, eager.samples) < MIN_PAIRS else "") + "."
             if eager and compiled else " No step ran after the last compile: nothing to compare.")
    waits = run.kind_ms(WAIT)
    waited = (f" Ranks waited for each other {len(waits)} time(s), up to {max(waits):.0f} ms (the timeline shows "
              "when)." if waits else "")
    verdict = f"{buckets}{per_rank}.{speed}{waited}"
    return Conclusion(costs(*rows), verdict)


SCENARIO = Scenario(
    "compiled", "Compiled DDP",
    "torch.compile on a DDP model: DDPOptimizer may split its graph at bucket boundaries (the run says whether it "
    "did), each rank recompiling for its own lengths.",
    ("rnn", "transformer"), launches, conclude)
