"""The optimization lab: how to make this dynamic model fast on this workload. A stream of requests of varying
length, served whole by each of PyTorch 2's strategies in a fresh worker process, compiles included; the
recommendation computed from the numbers, and the code that applies it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.core.progress import Progress
from explorer.core.workload import StreamParams
from explorer.labs.contract import LabContext, LabSpec, Needs, Work
from explorer.labs.optimize.job import OPTIMIZE_TIMEOUT_S
from explorer.labs.optimize.lab import run_optimize
from explorer.labs.optimize.results import OptimizeResult
from explorer.labs.optimize.strategies import STRATEGIES
from explorer.labs.optimize.view import OUTPUTS, format_optimize, view_of
from explorer.sources.contract import Subject
from models.config import knob

BACKENDS = ("inductor", "aot_eager", "eager")
# PyTorch 2's main answers, about two minutes on the RNN with inductor; the rest (a recording process first, a stance,
# powers of two) are ticked by hand: all twelve took ~5 minutes
DEFAULT_STRATEGIES = ("eager", "auto", "dynamic", "mark_dynamic", "buckets", "regional", "one_op_loop")


@dataclass(frozen=True)
class OptimizeParams(StreamParams):
    strategies: tuple[str, ...] = knob(DEFAULT_STRATEGIES, "the strategies to serve the stream with, each in a "
                                       "fresh worker process (each adds its compiles and the stream's time)",
                                       choices=tuple(STRATEGIES))
    backend: str = knob("inductor", "torch.compile's backend for every compiling strategy (inductor generates C++; "
                        "aot_eager and eager only trace: fast to compile, for trying the lab)", choices=BACKENDS)
    bound_s: int = knob(int(OPTIMIZE_TIMEOUT_S), "each strategy's time bound, seconds: past it, it is stopped and "
                        "reported as such", min=10, max=1800)


def run(subject: Subject | None, p: OptimizeParams, ctx: LabContext) -> Iterator[Progress | OptimizeResult]:
    assert subject is not None, "the optimization lab needs a model"
    yield from run_optimize(ctx.workers, subject.model, subject.config, p.workload(), list(p.strategies),
                            p.backend, float(p.bound_s))


def work(p: OptimizeParams) -> Work:
    served = sum(p.workload().lengths)
    recorded = [s for s in p.strategies if STRATEGIES[s].recorded]  # their recording runs serve it too
    streams = len(p.strategies) + len(recorded)
    return Work(2 * served * streams, f"{served:,} tokens x 2 (each request and its eager pair) x {streams} "
                f"streams ({len(p.strategies)} strategies; {', '.join(recorded) or 'none'} after a recording run)",
                "max_served_tokens")


SPEC = LabSpec(
    name="optimize", title="Optimization lab", summary="serve a stream of requests with every strategy and say "
    "which makes this model fastest on it",
    intro="How do you make a dynamic model fast? PyTorch 2 has several answers, and which one wins depends on the "
          "model and on the **lengths your requests have**. This lab makes a workload (a stream of requests whose "
          "lengths follow a distribution, or yours, typed or pasted) and serves the whole stream with each "
          "strategy, **each in a fresh worker process** as a server would after a deploy: eager; `torch.compile` "
          "with `dynamic=None`, `dynamic=True` or `mark_dynamic`; padding to buckets (planned for this workload, or "
          "powers of two); regional compilation of the repeated block; dynamo's profile and the mega-cache "
          "(`save_cache_artifacts`) carried from a first process to a fresh one; `set_stance`; the "
          "loop written as one operator (the RNN's `loop=scan`, early exit's `exit_with=cond`). Shown: the time to "
          "serve the stream with its compiles, when each compile happened, the latency after warm-up, the padded "
          "work, the memory, the answers against eager, the recommendation, and the code that applies it.",
    button="Serve the stream", params=OptimizeParams, needs=Needs.MODEL, run=run, view=view_of, outputs=OUTPUTS,
    text=format_optimize, work=work)
