"""Early exit (adaptive depth): a confidence head after every block; stop once it is confident.

The `if` on a tensor value is ordinary Python, so how many blocks run (and so the graph) depends
on the input; it is also exactly what a static graph cannot express without torch.cond.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.branch import Branch
from models.config import ConfigError, knob
from models.heads import NUM_CLASSES
from models.transformer import EncoderBlock, TokenEmbedding, block_activation_floats, mean_tokens, padding_mask

FFN_RATIO, ATTENTION = 2, "math"  # fixed: the knobs of this model are depth and the exit threshold


@dataclass(frozen=True)
class EarlyExitConfig:
    blocks: int = knob(6, "Blocks available; fewer run when an exit head is confident early.", min=1, max=16)
    width: int = knob(64, "Model width; a multiple of heads.", min=8, max=512, step=8)
    heads: int = knob(4, "Attention heads per block.", min=1, max=16)
    threshold: float = knob(
        0.6, "Exit after the first block whose confidence reaches this (1 = never exit early).",
        min=0.0, max=1.0, step=0.01,
    )
    exit_with: str = knob(
        "python", "How the exit decision is written: a Python if (only the blocks that run are in the graph) or "
        "torch.cond (both branches are traced: exportable, the depth still decided by the data).",
        choices=("python", "cond"))
    seed: int = knob(0, "Seed of the random weights.", min=0, max=2**31 - 1)

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ConfigError(f"width ({self.width}) must be a multiple of heads ({self.heads})")


class ExitHead(nn.Module):
    """Class logits from the mean token state; confidence is the top softmax probability."""

    def __init__(self, width: int, depth_fraction: float):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.classify = nn.Linear(width, NUM_CLASSES)
        # Trained early-exit heads grow more confident with depth; random ones would not, so the
        # init scale grows with the head's depth: confidence then rises (noisily) from ~1/C at the
        # first block towards 1, and the threshold knob moves the exit depth.
        nn.init.normal_(self.classify.weight, std=3.0 * depth_fraction / width**0.5)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.classify(self.norm(mean_tokens(x, mask)))
        return logits, logits.softmax(-1).amax(-1)


class EarlyExitEncoder(nn.Module):
    def __init__(self, cfg: EarlyExitConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = TokenEmbedding(cfg.width)
        self.blocks = nn.ModuleList(
            EncoderBlock(cfg.width, cfg.heads, FFN_RATIO, "pre", "gelu", ATTENTION) for _ in range(cfg.blocks)
        )
        self.exits = nn.ModuleList(ExitHead(cfg.width, (i + 1) / cfg.blocks) for i in range(cfg.blocks))
        self.branches: list[Branch] | None = None  # the exit decisions of a forward, when a caller asks for them
        # For torch.cond: a tensor, so tracing never turns the threshold into a symbolic float (cond refuses one).
        self.register_buffer("threshold", torch.tensor(cfg.threshold), persistent=False)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        mask = padding_mask(ids, lengths)
        x = self.embed(ids)
        if self.cfg.exit_with == "cond" and self.cfg.threshold < 1.0:
            return self._from_block(0, x, mask)
        # The decisions are kept for the drawing when the caller asks (`branches` set to a list: the graph capture),
        # in eager runs only; a timed, compiled or traced forward does no bookkeeping.
        recording = (self.branches is not None and self.cfg.threshold < 1.0
                     and not (torch.compiler.is_compiling() or torch.jit.is_tracing()))
        for i, (block, exit_head) in enumerate(zip(self.blocks, self.exits, strict=True)):
            x = block(x, mask)
            logits, confidence = exit_head(x, mask)
            if recording:
                self.branches.append(self._branch(i, confidence.detach().min()))
            # Data-dependent control flow: the whole batch exits when its least confident item is sure.
            if self.cfg.threshold < 1.0 and bool(confidence.min() >= self.cfg.threshold):
                break
        return logits

    def _branch(self, i: int, least: torch.Tensor) -> Branch:
        """The decision after block i, as the drawing says it (decided as the loop's `if` decides it)."""
        t, stop = self.cfg.threshold, bool(least >= self.cfg.threshold)
        mark = f"{float(least):.2f} ≥ {t:.2f}: exit" if stop else f"{float(least):.2f} < {t:.2f}"
        then = "exit" if stop else ("next block" if i + 1 < len(self.blocks) else "no block left")
        said = f"exit head {i}: least confident item {float(least):.2f}, threshold {t:.2f}: {then}"
        skipped = tuple(f"blocks.{j}" for j in range(i + 1, len(self.blocks))) if stop else ()
        return Branch(f"blocks.{i}", mark, said, stop, skipped)

    def _from_block(self, i: int, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Blocks i.. with the same exit rule as `forward`'s loop, each decision a torch.cond: both branches are
        functions of tensors, so export keeps the decision in the graph instead of baking in one depth."""
        x = self.blocks[i](x, mask)
        logits, confidence = self.exits[i](x, mask)
        if i == len(self.blocks) - 1:
            return logits
        return torch.cond(confidence.min() >= self.threshold,
                          lambda x, logits: logits.clone(),  # a branch may not return its input itself
                          lambda x, logits: self._from_block(i + 1, x, mask), (x, logits))


def activation_bytes(cfg: EarlyExitConfig, tokens: int, batch: int = 1) -> int:
    """Upper bound of the bytes a train step saves for backward when every block runs (float32)."""
    exit_head = tokens * cfg.width
    per_block = block_activation_floats(cfg.width, cfg.heads, FFN_RATIO, ATTENTION, tokens) + exit_head
    return 4 * batch * (2 * tokens * cfg.width + cfg.blocks * per_block)
