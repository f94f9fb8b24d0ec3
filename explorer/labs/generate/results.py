"""What a generation run measured, and what follows from the numbers: per cache kind, the tokens against the
first kind's (the same greedy bytes, the logits within a tolerance), the prefill and the per-token decode time,
compiled against eager as a ratio with its interval over paired warm generations (a generation is the independent
unit: its decode steps run one after another and share the machine's slow spells), and the tokens after which the
compile has paid for itself, with the range the interval implies, said only where the interval says compiled is
faster."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from explorer.compile.observe import cache_said
from explorer.eager.compare import Comparison, Estimate
from explorer.labs.generate.job import CacheRun

SAME_LOGITS = 1e-5  # cache kinds that differ by more than this do not compute the same thing


@dataclass
class Alone:
    """One prompt of a batch, generated alone: its tokens against its batched row's."""

    prompt: str
    same_tokens: bool
    max_diff: float  # max |logits| alone vs its row of the batch
    seconds: float  # median of its warm generations, all steps


@dataclass
class GenerateResult:
    model: str
    config: dict[str, Any]
    prompts: list[str]
    pads: list[int]
    tokens: int
    repeats: int
    runs: list[CacheRun]
    graph_at: int = 1  # the step whose autograd graph each cache kind's run captured
    alone: list[Alone] = field(default_factory=list)  # several prompts: each generated alone too

    @property
    def reference(self) -> CacheRun:
        return self.runs[0]

    def agreement(self, run: CacheRun) -> tuple[bool, float]:
        """Whether `run` generated the reference's tokens, and the largest logit difference."""
        return run.tokens == self.reference.tokens, float((run.logits - self.reference.logits).abs().max())

    def per_token(self, run: CacheRun) -> Comparison | None:
        """Eager against compiled per token: each warm generation's mean decode step (step 0, the prefill, aside),
        one pair per generation (eager's and compiled's timed back to back, the order alternating)."""
        if not run.compiled_s:
            return None
        eager = [1e3 * statistics.fmean(r[1:]) for r in run.eager_s]
        compiled = [1e3 * statistics.fmean(r[1:]) for r in run.compiled_s]
        return Comparison.of("eager", "compiled", eager, compiled, threads=run.threads, cores=run.cores)

    def break_even(self, run: CacheRun) -> Estimate | None:
        """Generated tokens after which compiling has paid for its compile seconds, with the range the per-token
        interval implies: only where that interval says the compiled decode step is faster."""
        c = self.per_token(run)
        return c.paid_back(sum(x.seconds for x in run.compiles)) if c else None

    @staticmethod
    def compiled_cache(run: CacheRun) -> str:
        """Whether inductor's caches served the compiles a break-even pays back."""
        return cache_said([x.cache for x in run.compiles])

    @staticmethod
    def cuda_graphs(run: CacheRun) -> str | None:
        """What mode="reduce-overhead" did, from inductor's count of the graphs it ran without CUDA graphs."""
        if run.cudagraph_skips is None:
            return None
        graphs = len(run.compiles)
        if run.cudagraph_skips >= graphs:
            return (f"mode='reduce-overhead' with the {run.cache} cache: all {graphs} compiled graphs ran without "
                    "CUDA graphs (inductor skips them for a graph on the CPU), so this is inductor's default code")
        return (f"mode='reduce-overhead' with the {run.cache} cache: {graphs - run.cudagraph_skips} of {graphs} "
                "compiled graphs captured as CUDA graphs")

    def batching(self) -> str:
        """The padded batch against its prompts one at a time: tokens per second (medians of the warm runs, not
        paired: figures, not a "faster"), and the positions the left pads take in every row's cache."""
        made = len(self.prompts) * self.tokens
        batched_s = statistics.median(sum(r) for r in self.reference.eager_s)
        alone_s = sum(a.seconds for a in self.alone)
        longest = max(len(p.encode()) for p in self.prompts)
        padded = sum(self.pads)
        return (f"the batch of {len(self.prompts)} generates {made / batched_s:,.0f} tokens/s, one at a time "
                f"{made / alone_s:,.0f} tokens/s ({self.reference.cache} cache, eager, medians of {self.repeats} "
                f"runs); its left pads take {padded} of {len(self.prompts) * longest} prompt positions "
                f"({padded / (len(self.prompts) * longest):.0%}), read and masked at every step")

    def verdict(self) -> str:
        parts = []
        for run in self.runs[1:]:
            same, diff = self.agreement(run)
            parts.append(f"the {run.cache} cache generates {'the same' if same else 'OTHER'} tokens as "
                         f"{self.reference.cache} (logits within {diff:.1g}"
                         f"{'' if diff <= SAME_LOGITS else f', past {SAME_LOGITS:g}'})")
        for run in self.runs:
            c = self.per_token(run)
            if run.error:
                parts.append(f"compiled with the {run.cache} cache failed: {run.error}")
            elif c is not None:
                k = self.break_even(run)
                decode = [x for x in run.compiles if x.at > 0]
                parts.append(f"compiled with the {run.cache} cache: {len(run.compiles)} compile(s) "
                             f"({self.compiled_cache(run)}), {len(decode)} after the prefill; per token {c.said()}"
                             + (f"; it pays for its compile after {k.said()} tokens" if k is not None else ""))
                parts += filter(None, [self.cuda_graphs(run)])
        if self.alone:
            parts.append(self.batching())
        for a in self.alone:
            parts.append(f"{a.prompt[:20]!r} alone generates {'the same' if a.same_tokens else 'OTHER'} tokens as in "
                         f"the padded batch (logits within {a.max_diff:.1g})")
        return "; ".join(parts) + "." if parts else "One cache kind, eager: nothing to compare."

    def as_dict(self) -> dict[str, Any]:
        runs = []
        for run in self.runs:
            same, diff = self.agreement(run)
            c = self.per_token(run)
            kept = {f.name: getattr(run, f.name) for f in fields(run) if f.name not in ("logits", "graph", "compiles")}
            runs.append(kept | {"compiles": [asdict(c) for c in run.compiles],
                                "step_graph_nodes": len(run.graph.graph.nodes) if run.graph else None,
                                "same_tokens_as_reference": same, "max_logit_diff_vs_reference": diff,
                                "per_token": c.as_dict() if c else None,
                                "break_even_tokens": k.calls if (k := self.break_even(run)) else None,
                                "break_even_said": k.said() if k else None, "compile_cache": self.compiled_cache(run),
                                "cuda_graphs": self.cuda_graphs(run)})
        return {"model": self.model, "config": self.config, "prompts": self.prompts, "pads": self.pads,
                "tokens": self.tokens, "repeats": self.repeats, "reference": self.reference.cache,
                "graph_step": self.graph_at,
                "verdict": self.verdict(), "caches": runs, "alone": [asdict(a) for a in self.alone],
                "batching": self.batching() if self.alone else None}
