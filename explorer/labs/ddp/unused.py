"""Scenario 1, unused parameters: early-exit ranks that stop at different depths.

Each rank gets a sentence its model exits on at a different block (found by running candidates through the
model). The loss sums every exit head that ran (deep supervision, as early-exit models are trained), so what a
rank leaves unused is exactly the blocks and heads past its exit. Three DDP settings in turn, each on a process
group of its own (a failed DDP step can leave a collective behind that would pair with the next one):
plain DDP, `find_unused_parameters=True`, `static_graph=True` with the depths swapped mid-way. Gradients are
checked against an exact all-reduce of each rank's own gradients, on a group of their own too."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

import torch
import torch.distributed as dist
from torch import nn

from explorer.core.batches import sentence
from explorer.eager.compare import Comparison
from explorer.labs.ddp.results import Cost, WorldRun, first_line
from explorer.labs.ddp.scenario import Conclusion, Launch, Scenario, Setup, costs
from explorer.labs.ddp.training import Trainer, build, exact_grads, grad_error, loss_of
from explorer.labs.ddp.world import RankContext
from models.tokenizer import encode

PHASES = ("plain DDP", "find_unused_parameters=True", "static_graph=True")
STATIC_SWAP_STEP = 3  # static_graph: the ranks trade inputs (and so depths) at this step of the phase
TOLERANCE = 1e-5
COST_ROUNDS = 12  # steps of each setting in the cost run, paired: past MIN_PAIRS, for the paired interval
_CANDIDATES = [(n, seed) for n in (12, 24, 40, 64, 96) for seed in range(4)]


class DeepSupervised(nn.Module):
    """The early-exit model returning the logits of every exit head that ran, stacked (deep supervision, as
    early-exit models are trained): DDP must see every tensor the loss uses among its forward's outputs, or
    find_unused_parameters takes the heads for unused and then sees their gradients arrive."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self._logits: list[torch.Tensor] = []
        for head in model.exits:
            head.register_forward_hook(lambda m, i, out: self._logits.append(out[0]))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        self._logits.clear()
        self.model(ids)
        out, self._logits = torch.cat(self._logits), []
        return out  # (exits run x batch, classes)

    def depth(self, ids: torch.Tensor) -> int:
        with torch.no_grad():
            return len(self(ids)) // len(ids)


def supervised(model: str, config: dict) -> DeepSupervised:
    return DeepSupervised(build(model, config))


def inputs_by_depth(model: DeepSupervised, world_size: int) -> list[tuple[torch.Tensor, int]]:
    """A sentence per rank, at depths as far apart as the model allows (rank 0 the shallowest)."""
    found: dict[int, torch.Tensor] = {}
    for n, seed in _CANDIDATES:
        ids = torch.tensor([encode(sentence(n, seed))])
        found.setdefault(model.depth(ids), ids)
    depths = sorted(found)
    picks = [depths[round(r * (len(depths) - 1) / max(world_size - 1, 1))] for r in range(world_size)]
    return [(found[d], d) for d in picks]


def _unused_names(message: str) -> list[str]:
    """The parameter names TORCH_DISTRIBUTED_DEBUG=INFO adds to DDP's error."""
    m = re.search(r"Parameters which did not receive grad for rank \d+: ([^\n]+)", message)
    return [n.strip() for n in m.group(1).split(",")] if m else []


def _note_error(values: dict, key: str, model: nn.Module, exact: list[torch.Tensor]) -> None:
    values[key] = grad_error(model, exact)


def _phase(ctx: RankContext, name: str, make: Callable[[], DeepSupervised], inputs: list[tuple[torch.Tensor, int]],
           steps: int, ref_group: dist.ProcessGroup, swap_at: int | None = None, **options: object) -> None:
    """`steps` DDP steps of `model` on this rank's input (the next rank's from `swap_at` on); gradients checked
    against the exact all-reduce at the first step; the error, if one comes, recorded with its step."""
    v = ctx.report.values
    model, reference = make(), make()  # the same seeded weights: the reference is what DDP starts from
    trainer = Trainer.make(ctx, model, dist.new_group(), **options)
    ms: list[float] = []
    v[f"{name}: first step"] = ctx.step + 1
    try:
        for i in range(steps):
            ctx.step += 1
            ctx.phase(f"{name}, step {i + 1}/{steps}")
            ids, depth = inputs[(ctx.rank + (i + 1 >= swap_at if swap_at else 0)) % ctx.world_size]
            v.setdefault(f"{name}: depths", []).append(depth)
            check = None
            if i == 0:
                exact = exact_grads(reference, (ids,), loss_of, ref_group)
                check = partial(_note_error, v, f"{name}: gradient error", model, exact)
            ms.append(trainer.step((ids,), check=check))
    except RuntimeError as e:
        v[f"{name}: error"] = str(e).strip().splitlines()[0]
        v[f"{name}: error step"] = ctx.step
        v[f"{name}: unused"] = _unused_names(str(e))
    v[f"{name}: step ms"] = ms


def _unused_rank(ctx: RankContext, model: str, config: dict, steps: int) -> None:
    inputs = inputs_by_depth(supervised(model, config), ctx.world_size)
    ctx.report.values["depth"] = inputs[ctx.rank][1]
    ref_group = dist.new_group()
    make = partial(supervised, model, config)
    _phase(ctx, PHASES[0], make, inputs, 2, ref_group)
    _phase(ctx, PHASES[1], make, inputs, steps, ref_group, find_unused_parameters=True)
    _phase(ctx, PHASES[2], make, inputs, max(steps, STATIC_SWAP_STEP + 1), ref_group, swap_at=STATIC_SWAP_STEP,
           static_graph=True)


def _cost_rank(ctx: RankContext, model: str, config: dict, steps: int) -> None:
    """Step times where nothing is unused (every block runs on every rank): plain DDP, DDP with
    find_unused_parameters, and one process alone, interleaved step by step (the order rotated round by round, and
    every rank lined up by a barrier before each timed step) so that drift hits all three alike; at least
    COST_ROUNDS rounds, whatever the steps per phase, for the paired interval."""
    full = config | {"threshold": 1.0}
    ids = torch.tensor([encode(sentence(40, ctx.rank))])
    trainers = list({"plain DDP": Trainer.make(ctx, supervised(model, full)),
                     "find_unused_parameters=True": Trainer.make(ctx, supervised(model, full),
                                                                 find_unused_parameters=True),
                     "one process alone": Trainer.make(ctx, supervised(model, full), distributed=False)}.items())
    rounds = max(steps, COST_ROUNDS)
    for i in range(rounds + 1):  # the first round warms up
        ctx.phase(f"step {i + 1}/{rounds + 1}")
        shift = i % len(trainers)
        for name, t in trainers[shift:] + trainers[:shift]:
            ctx.step += 1
            dist.barrier()  # the all-reduce waits for the slowest rank: start every rank's step together
            ms = t.step((ids,))
            if i:
                ctx.report.values.setdefault(f"{name} ms", []).append(ms)


def launches(setup: Setup) -> list[Launch]:
    args = (setup.model, setup.config, setup.steps)
    # INFO makes DDP name the unused parameters; DETAIL would segfault DDP's constructor with gloo in torch 2.13.
    return [Launch("exits at different depths: plain DDP, then find_unused_parameters, then static_graph",
                   _unused_rank, args, {"TORCH_DISTRIBUTED_DEBUG": "INFO"}),
            Launch("nothing unused (every block runs): the cost of find_unused_parameters", _cost_rank, args)]


def _said(run: WorldRun, phase: str) -> str:
    errors = [(r.rank, r.report.values.get(f"{phase}: error"), r.report.values.get(f"{phase}: error step"))
              for r in run.ranks if r.report]
    failed = [(rank, e, step) for rank, e, step in errors if e]
    if not failed:
        broken = [f"rank {r.rank} {r.state}" + (f" ({first_line(r.report.error)})" if r.report and r.report.error
                                                 else "") for r in run.ranks if r.state != "finished"]
        return "; ".join(broken) if broken else "every step completed"
    _, error, step = failed[0]
    first = run.ranks[0].report.values.get(f"{phase}: first step", 1) if run.ranks[0].report else 1
    return (f"rank(s) {', '.join(str(r) for r, _, _ in failed)} raised at step {step - first + 1}: "
            f"\"{first_line(error)}\"")


def conclude(setup: Setup, runs: list[WorldRun]) -> Conclusion:
    main, cost = runs
    depths = [r.report.values.get("depth") for r in main.ranks if r.report]
    rows: list[Cost | None] = []
    parts = [f"Exit depths per rank: {depths}."]
    for phase in PHASES:
        errors = [r.report.values.get(f"{phase}: gradient error") for r in main.ranks if r.report]
        err = max((e for e in errors if e is not None), default=None)
        exact = "" if err is None else (f" First step's gradients {'exact' if err <= TOLERANCE else 'WRONG'} "
                                        f"(max |DDP - exact all-reduce| = {err:.2g}).")
        parts.append(f"**{phase}**: {_said(main, phase)}.{exact}")
        rows.append(Cost.of(f"{phase}, exits differ: step", main.slowest(f"{phase}: step ms")))
    for name in ("plain DDP", "find_unused_parameters=True", "one process alone"):
        rows.append(Cost.of(f"nothing unused, {name}: step", cost.slowest(f"{name} ms")))
    plain, unused = cost.slowest("plain DDP ms"), cost.slowest("find_unused_parameters=True ms")
    if plain and len(plain) == len(unused):  # interleaved step by step: pairs
        pair = Comparison.of("find_unused_parameters", "plain DDP", unused, plain)
        parts.append(f"Its cost with nothing unused, step by step against plain DDP: {pair.said()}.")
    names = sorted({n for r in main.ranks if r.report for n in r.report.values.get(f"{PHASES[0]}: unused", [])})
    if names:
        parts.append(f"Unused parameters DDP named (TORCH_DISTRIBUTED_DEBUG=INFO): {', '.join(names[:8])}"
                     f"{' …' if len(names) > 8 else ''}.")
    if len(set(depths)) == 1:
        parts.append("Every rank exited at the same depth with this architecture: lower the threshold to make them "
                     "differ.")
    return Conclusion(costs(*rows), " ".join(parts))


SCENARIO = Scenario(
    "unused", "Unused parameters (early exit)",
    "Ranks exit at different depths: plain DDP fails (after one silently wrong step), find_unused_parameters "
    "works (its cost measured against plain DDP), static_graph breaks when the depth changes.",
    ("early_exit",), launches, conclude)

