"""A training step inside a rank, timed piece by piece: forward, backward (until this rank's last gradient bucket
is ready), the wait for the other ranks plus the all-reduce, the optimizer. Shared by every scenario.

The split comes from DDP itself: a communication hook notes when each gradient bucket is ready on this rank (its
compute is done) and then all-reduces it exactly as DDP's default does; `backward()` returns once every bucket's
all-reduce is complete, which needs the slowest rank. What the all-reduce alone costs is measured separately
(`allreduce_alone_ms`, ranks lined up by a barrier), so the rest of that span is waiting."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from explorer.core.batches import pad_ids
from explorer.labs.ddp.results import ALLREDUCE, BACKWARD, FORWARD, OPTIMIZER, WAIT
from explorer.labs.ddp.world import RankContext
from explorer.sources.registry import build_model, make_config

LR = 0.01


def build(model: str, config: dict) -> nn.Module:
    return build_model(model, make_config(model, config))


def batch_of(seqs: list[list[int]]) -> tuple[torch.Tensor, ...]:
    """One padded batch (ids, lengths), or a single sentence as it is."""
    if len(seqs) == 1:
        return (torch.tensor(seqs),)
    return pad_ids(seqs)


def loss_of(logits: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Cross-entropy against class 0 (the weights are random), summed and scaled so that DDP's mean over ranks is
    the mean over the whole global batch even when ranks hold different numbers of sentences."""
    return F.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long), reduction="sum") * scale


class BucketClock:
    """DDP's default all-reduce as a communication hook that notes when this rank's last bucket became ready."""

    def __init__(self, ddp: DDP, group: dist.ProcessGroup | None) -> None:
        self.last_ready = 0.0

        def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
            self.last_ready = time.perf_counter()
            return allreduce_hook(group, bucket)

        # DDP checks the hook's annotations as objects; this module's are strings (postponed evaluation).
        hook.__annotations__ = {"state": object, "bucket": dist.GradBucket,
                                "return": torch.futures.Future[torch.Tensor]}
        ddp.register_comm_hook(None, hook)


def allreduce_alone_ms(params: list[nn.Parameter], group: dist.ProcessGroup | None, repeats: int = 7) -> float:
    """Median time of one all-reduce of the whole gradient with every rank lined up by a barrier: the transfer
    itself, no waiting (gloo, loopback)."""
    flat = torch.zeros(sum(p.numel() for p in params))
    times = []
    for _ in range(repeats):
        dist.barrier(group)
        start = time.perf_counter()
        dist.all_reduce(flat, group=group)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


@dataclass
class Trainer:
    """A DDP model (or a plain one: `ddp` None) with its optimizer, stepping and recording segments."""

    ctx: RankContext
    module: nn.Module
    ddp: DDP | None
    clock: BucketClock | None
    comm_ms: float  # the all-reduce alone (0 without DDP)

    @classmethod
    def make(cls, ctx: RankContext, module: nn.Module, group: dist.ProcessGroup | None = None,
             distributed: bool = True, **ddp_options: object) -> Trainer:
        """`module` under DDP on `group` (None: the default group) with `ddp_options`, or alone."""
        if not distributed:
            return cls(ctx, module, None, None, 0.0)
        ddp = DDP(module, process_group=group, **ddp_options)
        return cls(ctx, module, ddp, BucketClock(ddp, group), allreduce_alone_ms(list(module.parameters()), group))

    @property
    def net(self) -> nn.Module:
        return self.ddp if self.ddp is not None else self.module

    def step(self, inputs: tuple[torch.Tensor, ...], loss_fn: Callable[[torch.Tensor], torch.Tensor] = loss_of,
             forward_kind: str = FORWARD, check: Callable[[], None] | None = None) -> float:
        """One training step, recorded as segments of `ctx.step`; returns its milliseconds. `check` runs after
        backward, before the update (gradients in place), and is not timed."""
        ctx = self.ctx
        start = time.perf_counter()
        loss = loss_fn(self.net(*inputs))
        backward_start = ctx.record(forward_kind, start)
        loss.backward()
        done = time.perf_counter()
        if self.clock is not None:
            computed = max(self.clock.last_ready, backward_start)
            ctx.record(BACKWARD, backward_start, computed)
            comm_start = max(computed, done - self.comm_ms / 1e3)
            ctx.record(WAIT, computed, comm_start)
            ctx.record(ALLREDUCE, comm_start, done)
        else:
            ctx.record(BACKWARD, backward_start, done)
        if check is not None:
            check()
        update_start = time.perf_counter()
        with torch.no_grad():
            for p in self.module.parameters():
                if p.grad is not None:
                    p.add_(p.grad, alpha=-LR)
                    p.grad = None
        return (done - start + ctx.record(OPTIMIZER, update_start) - update_start) * 1e3


def exact_grads(module: nn.Module, inputs: tuple[torch.Tensor, ...], loss_fn: Callable[[torch.Tensor], torch.Tensor],
                group: dist.ProcessGroup) -> list[torch.Tensor]:
    """The gradient DDP should produce: this rank's own (zeros where a parameter got none), summed over every rank
    with an all-reduce per parameter and divided by the world size. `module` is an untouched copy."""
    loss_fn(module(*inputs)).backward()
    world = dist.get_world_size(group)
    out = []
    for p in module.parameters():
        g = p.grad.clone() if p.grad is not None else torch.zeros_like(p)
        dist.all_reduce(g, group=group)
        out.append(g / world)
    return out


def grad_error(module: nn.Module, exact: list[torch.Tensor]) -> float:
    """Largest |DDP's gradient - the exact one| over every parameter (a missing gradient counts as zeros)."""
    return max(float(((p.grad if p.grad is not None else torch.zeros_like(p)) - e).abs().max())
               for p, e in zip(module.parameters(), exact, strict=True))
