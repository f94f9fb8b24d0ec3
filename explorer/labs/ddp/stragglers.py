"""Scenario 2, stragglers: each step's global batch is drawn from the batching lab's Zipf lengths and split over
the ranks; a rank with the long sentences computes while the others wait in the all-reduce.

Two shardings of the very same batches, step by step in turn so that drift hits both: round-robin (what a
`DistributedSampler` does) and equal padded tokens (sort by length, cut into contiguous runs whose
sentences x longest length is as even as it can be). Each rank pads its own shard; the loss is scaled so that
DDP's mean over ranks is the mean over the global batch, whatever each rank holds."""

from __future__ import annotations

from functools import partial

from explorer.core.batches import generate_lengths, sentence
from explorer.eager.compare import Comparison
from explorer.labs.ddp.results import WAIT, Cost, Segment, WorldRun
from explorer.labs.ddp.scenario import Conclusion, Launch, Scenario, Setup, costs
from explorer.labs.ddp.training import Trainer, batch_of, build, loss_of
from explorer.labs.ddp.world import RankContext
from models.tokenizer import encode

SHARDINGS = ("round-robin", "equal tokens")
PER_RANK, MIN_LEN, MAX_LEN = 8, 5, 300


def padded(shard: list[list[int]]) -> int:
    return len(shard) * max(map(len, shard))


def round_robin(seqs: list[list[int]], world: int) -> list[list[list[int]]]:
    return [seqs[r::world] for r in range(world)]


def equal_tokens(seqs: list[list[int]], world: int) -> list[list[list[int]]]:
    """Sorted by length (longest first), cut into `world` contiguous runs that minimise the largest padded size."""
    ordered = sorted(seqs, key=len, reverse=True)

    def cut(cap: int) -> list[list[list[int]]]:
        parts: list[list[list[int]]] = []
        for s in ordered:  # a run's longest sentence is its first
            if parts and (len(parts[-1]) + 1) * len(parts[-1][0]) <= cap:
                parts[-1].append(s)
            else:
                parts.append([s])
        return parts

    caps = sorted({k * len(s) for s in ordered for k in range(1, len(ordered) + 1)})
    parts = cut(next(c for c in caps if len(cut(c)) <= world))
    while len(parts) < world:  # every rank needs a batch: split the largest run
        i = max((i for i, p in enumerate(parts) if len(p) > 1), key=lambda i: padded(parts[i]))
        half = len(parts[i]) // 2
        parts[i:i + 1] = [parts[i][:half], parts[i][half:]]
    return parts


def global_batch(step: int, world: int, per_rank: int = PER_RANK) -> list[list[int]]:
    lengths = generate_lengths(world * per_rank, "zipf", MIN_LEN, MAX_LEN, seed=step)
    return [encode(sentence(n, step * 100_003 + i)) for i, n in enumerate(lengths)]


def _straggler_rank(ctx: RankContext, model: str, config: dict, steps: int) -> None:
    trainer = Trainer.make(ctx, build(model, config))
    v = ctx.report.values
    v["all-reduce alone ms"] = trainer.comm_ms
    for s in range(steps + 1):  # step 0 warms up
        seqs = global_batch(s, ctx.world_size)
        loss = partial(loss_of, scale=ctx.world_size / len(seqs))
        order = list(zip(SHARDINGS, (round_robin, equal_tokens), strict=True))
        for name, shard_fn in order if s % 2 else order[::-1]:  # the order inside a step's pair rotates
            ctx.step += 1
            ctx.phase(f"step {s}/{steps}, {name}")
            shard = shard_fn(seqs, ctx.world_size)[ctx.rank]
            ms = trainer.step(batch_of(shard), loss)
            v.setdefault("sharding", []).append(name)
            v.setdefault("padded tokens", []).append(padded(shard))
            if s:
                v.setdefault(f"{name} ms", []).append(ms)


def launches(setup: Setup) -> list[Launch]:
    return [Launch(f"{PER_RANK} Zipf-length sentences per rank per step: round-robin, then equal padded tokens",
                   _straggler_rank, (setup.model, setup.config, setup.steps))]


def _wait_segments(run: WorldRun, sharding: str) -> list[Segment]:
    """Every rank's waits in the all-reduce under `sharding`, warm-up excluded."""
    return [s for r in run.ranks if r.report for s in r.report.segments
            if s.kind == WAIT and s.step > len(SHARDINGS) and r.report.values["sharding"][s.step - 1] == sharding]


def _waits(run: WorldRun, sharding: str) -> list[float]:
    """Per step, the longest any rank waited: the idle time of the rank that had the least to do."""
    per_step: dict[int, float] = {}
    for s in _wait_segments(run, sharding):
        per_step[s.step] = max(per_step.get(s.step, 0.0), s.ms)
    return [per_step[k] for k in sorted(per_step)]


def _idle_share(run: WorldRun, sharding: str) -> float:
    """The ranks' time waiting over their time in steps, summed over the run."""
    steps = run.slowest(f"{sharding} ms")
    return sum(s.ms for s in _wait_segments(run, sharding)) / (run.world_size * sum(steps)) if steps else 0.0


def conclude(setup: Setup, runs: list[WorldRun]) -> Conclusion:
    (run,) = runs
    rows = [Cost.of(f"{n}: step (slowest rank)", run.slowest(f"{n} ms")) for n in SHARDINGS]
    rows += [Cost.of(f"{n}: the longest wait in the all-reduce, per step", _waits(run, n),
                     f"ranks idle {_idle_share(run, n):.0%} of their step time") for n in SHARDINGS]
    measured = costs(*rows)
    if not run.ok or len(measured) < 4:
        return Conclusion(measured, f"The run did not complete: {run.ending()}.")
    rr, eq, rr_wait, eq_wait = measured
    comm = run.value("all-reduce alone ms")
    # step k of each sharding ran the same global batch: the steps pair up
    rr_steps, eq_steps = (run.slowest(f"{n} ms") for n in SHARDINGS)
    paired = len(rr_steps) == len(eq_steps)
    said = Comparison.of(*SHARDINGS, rr_steps, eq_steps).said() if paired else \
        f"{rr.median_ms / eq.median_ms:.2f}x, medians of unequal step counts"
    verdict = (f"Round-robin sharding: median step {rr.median_ms:.0f} ms; the rank with the shorter sentences waits a "
               f"median {rr_wait.median_ms:.0f} ms per step for the other, and ranks sit idle "
               f"{_idle_share(run, SHARDINGS[0]):.0%} of their step time. Equal padded tokens: {eq.median_ms:.0f} ms "
               f"(step by step on the same batches: {said}), waits {eq_wait.median_ms:.0f} ms, idle "
               f"{_idle_share(run, SHARDINGS[1]):.0%}. The all-reduce itself takes {comm:.1f} ms (measured alone). "
               f"Same {setup.steps} batches for both, {PER_RANK} sentences per rank on average, lengths Zipf "
               f"{MIN_LEN}-{MAX_LEN}.")
    return Conclusion(measured, verdict)


SCENARIO = Scenario(
    "stragglers", "Stragglers from variable lengths",
    "Each rank's batch has its own lengths; the rank with the longest waits nobody, the others wait for it. Then "
    "length-aware sharding.",
    ("rnn", "transformer"), launches, conclude)
