"""Claim 6: dynamic execution can be slower with large batches or highly repetitive operations. Eager and
compiled forwards over a grid of batch size x sequence length (the batching lab's padded batches, all sentences
of one length, so nothing is padding), with the framework's per-op overhead share at each point."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo as dynamo
from torch.utils._python_dispatch import TorchDispatchMode

from explorer.claims.evidence import CONDITION, HOLDS, NOT_HERE, Chart, Claim, Evidence, Holds, Series, Verdict, times
from explorer.compile.observe import CountingBackend, run_guarded
from explorer.core.batches import token_ids
from explorer.core.errors import InputError
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.core.limits import FORWARD_BUDGET_S
from explorer.core.progress import Progress
from explorer.eager.compare import Comparison, compare
from explorer.eager.timing import Measurement, measure
from explorer.labs.batching import no_grad, prepare
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Job, WorkerContext, WorkerFailure, Workers

MODELS = ("rnn", "transformer")
BATCHES = (1, 16, 256)
LENGTHS = (4, 32)
OVERHEAD_BOUND = 0.5  # past this share of the time in per-op overhead, the framework dominates
# Where compute dominates, eager and compiled converge (ratio -> 1): a difference under this, even resolved, decides
# nothing (such a point can resolve in one run and not the next, which flipped the verdict between runs)
MIN_EFFECT = 0.05


class _OpCounter(TorchDispatchMode):
    """Counts the aten ops a call dispatches: each one pays the framework's per-op cost once in eager mode."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops += 1
        return func(*args, **(kwargs or {}))


@dataclass
class GridPoint:
    model: str
    batch: int
    length: int
    ops: int  # aten ops one eager forward dispatches
    eager: Measurement
    compiled: Measurement | None
    fallback: str | None = None
    comparison: Comparison | None = None  # eager (a) and compiled (b) in interleaved pairs

    @property
    def tokens(self) -> int:
        return self.batch * self.length


@dataclass(frozen=True)
class PointJob(Job[GridPoint]):
    """One point of the grid in the compile worker, with its own timeout: compiled fresh for its shape
    (dynamic=False: a symbolic unroll of the RNN over a batch ran past the compile timeout here), then timed
    eagerly and compiled back to back."""

    model: str
    batch: int
    length: int
    backend: str = "inductor"
    budget_scale: float = 1.0

    def run(self, ctx: WorkerContext) -> GridPoint:
        ctx.held = None  # dynamo is reset: the Playground's compiled model is rebuilt on its next job
        dynamo.reset()
        module = build_model(self.model, make_config(self.model))
        counter = CountingBackend(self.backend)
        compiled = torch.compile(module, backend=counter, dynamic=False)
        batch, length = self.batch, self.length
        prep = prepare(module, "pad", token_ids([text_of_length(DEFAULT_TEXT, length)] * batch), length)
        with _OpCounter() as ops, torch.no_grad():
            prep.run()
        ctx.phase("compiling")
        ran = run_guarded(no_grad(lambda: prep.run(compiled)), counter, f" at {batch} x {length}")
        ctx.phase("timing eager and compiled")
        budget = FORWARD_BUDGET_S * self.budget_scale
        if ran.fallback or ran.error:
            eager, pair = measure(f"eager {batch}x{length}", no_grad(prep.run), budget), None
        else:
            pair = compare("eager", no_grad(prep.run), "compiled", no_grad(lambda: prep.run(compiled)), 2 * budget)
            eager = pair.measurement("eager")
        dynamo.reset()
        return GridPoint(self.model, batch, length, ops.ops, eager, pair and pair.measurement("compiled"),
                         ran.fallback or ran.error, pair)


def overhead_share(p: GridPoint, per_op_ms: float) -> float:
    """The share of an eager forward that is the framework's per-op cost (ops x the time of one op at the
    tiniest size, where compute is next to nothing), at most 1."""
    return min(1.0, p.ops * per_op_ms / p.eager.median_ms)


def grid(w: Workers) -> Iterator[Progress | list[GridPoint]]:
    """Every model at every point, one job each; progress messages, then the points."""
    points: list[GridPoint] = []
    batches, lengths = ((1, 8), (4,)) if w.quick else (BATCHES, LENGTHS)
    backend, scale = ("eager", 0.25) if w.quick else ("inductor", 1.0)
    grid_points = [(model, batch, length) for model in MODELS for length in lengths for batch in batches]
    for i, (model, batch, length) in enumerate(grid_points, 1):
        try:
            for item in w.compile.run(PointJob(model, batch, length, backend, scale)):
                if isinstance(item, Progress):
                    yield Progress(item.elapsed_s, f"point {i} of {len(grid_points)}, {model} at {batch} x {length} "
                                                   f"tokens: {item.phase}")
                else:
                    points.append(item)
        except WorkerFailure as e:
            raise InputError(f"{model} at {batch} x {length} tokens: {e}") from None
    yield points


def evidence_of(points: list[GridPoint]) -> Evidence:
    numbers: dict[str, float] = {}
    series: list[Series] = []
    shown = []
    for model in MODELS:
        mine = sorted((p for p in points if p.model == model), key=lambda p: (p.tokens, p.batch))
        tiny = min(mine, key=lambda p: p.tokens)
        per_op = tiny.eager.median_ms / tiny.ops
        for p in mine:
            key = f"{model}.{p.batch}x{p.length}"
            numbers[f"{key}.share"] = overhead_share(p, per_op)
            if p.comparison is not None:
                numbers |= {f"{key}.speedup": p.comparison.ratio, f"{key}.speedup_low": p.comparison.low,
                            f"{key}.speedup_high": p.comparison.high}
        x = [f"{p.batch}<br>×{p.length}" for p in mine]  # two lines: six side by side ran into each other
        ratios = [p.comparison for p in mine]  # None where the point did not compile
        series += [  # one message: the speed-up follows the overhead share
            Series(f"{model}: speed-up", x, [c.ratio if c else None for c in ratios],
                   low=[c.low if c else None for c in ratios], high=[c.high if c else None for c in ratios]),
            Series(f"{model}: overhead share", x, [100 * numbers[f"{model}.{p.batch}x{p.length}.share"] for p in mine],
                   axis="y2"),
        ]
        big = mine[-1]
        shown.append((f"{model}: per-op cost", f"{per_op * 1e3:.1f} µs",
                      f"{tiny.ops} ops at {tiny.batch}×{tiny.length} tokens; {overhead_share(big, per_op):.0%} of "
                      f"the time at {big.batch}×{big.length}"))
        sp = [numbers[k] for k in numbers if k.startswith(f"{model}.") and k.endswith(".speedup")]
        if sp:
            shown.append((f"{model}: compiled speed-up", f"{times(min(sp))}–{times(max(sp))}", "over the grid"))
    chart = Chart("line", "Compiled speed-up and per-op overhead share",
                  "batch × tokens per sentence", "eager ÷ compiled (bars: 95% interval)", series,
                  y2_title="per-op overhead share of eager (%)", baseline=1.0)
    notes = ["each point a batch of identical sentences (no padding) through the batching lab's padded forward; "
             "eager and compiled (inductor, a static graph per point) timed in interleaved pairs in the compile "
             "worker, a point counted only where the speed-up's 95% interval excludes 1; the overhead share is a "
             "model, not a measurement: aten ops dispatched x the time per op at the smallest point / the eager "
             "time (so 100% at the smallest point by construction)"]
    return Evidence(numbers, shown, chart, notes)


def measure_claim(w: Workers) -> Iterator[Progress | Evidence]:
    for item in grid(w):
        yield item if isinstance(item, Progress) else evidence_of(item)


def judge(x: dict[str, float]) -> Verdict:
    """Where eager is slower (compiled faster by the whole interval), where it is not, and how the claim's two
    conditions fare: the grid's largest batch, and the points whose modelled per-op overhead is at least
    OVERHEAD_BOUND. "Can be slower" is said of a condition when eager was slower by MIN_EFFECT over the interval's
    whole width (its near bound past 1 + MIN_EFFECT), at
    one of its points; the claim holds when it is said of both and eager won none of their points (by as much),
    with a condition when of one. An unresolved point, or one resolved by less than MIN_EFFECT, is listed and
    decides nothing, so the verdict's kind changes between runs only when a real difference turns round."""
    points = sorted({k.rsplit(".", 1)[0] for k in x if k.endswith(".speedup")})
    if not points:
        return Verdict(NOT_HERE, "no compiled code ran on the grid")
    # eager slower: compiled faster by at least MIN_EFFECT at the interval's near bound; eager faster, the same way
    slower = [p for p in points if x[f"{p}.speedup_low"] >= 1 + MIN_EFFECT]
    faster = [p for p in points if x[f"{p}.speedup_high"] <= 1 / (1 + MIN_EFFECT)]
    small = [p for p in points if p not in slower and p not in faster
             and (x[f"{p}.speedup_low"] > 1 or x[f"{p}.speedup_high"] < 1)]
    unresolved = [p for p in points if p not in slower and p not in faster and p not in small]
    largest = max(int(p.rsplit(".", 1)[1].split("x")[0]) for p in points)
    conditions = {f"at the largest batch ({largest})":
                  [p for p in points if int(p.rsplit(".", 1)[1].split("x")[0]) == largest],
                  f"where the modelled per-op overhead is at least {OVERHEAD_BOUND:.0%} of eager's time":
                  [p for p in points if x[f"{p}.share"] >= OVERHEAD_BOUND]}

    def listed(ps: list[str]) -> str:
        return ", ".join(f"{p.replace('.', ' ')} ({times(x[f'{p}.speedup'])})" for p in ps) or "none"

    said = (f"eager slower at {len(slower)} of {len(points)} points ({listed(slower)}); eager faster at "
            f"{listed(faster)}; resolved but under {MIN_EFFECT:.0%} at {listed(small)}; not resolved at "
            f"{listed(unresolved)}")
    held, where = [], []
    for condition, ps in conditions.items():
        won, lost = [p for p in ps if p in slower], [p for p in ps if p in faster]
        where.append(f"{condition} eager was slower at {len(won)} of {len(ps)} points"
                     + (f" and faster at {len(lost)}" if lost else ""))
        held.append(bool(won) and not lost)
    why = f"{said}; {'; '.join(where)}"
    if all(held):
        return Verdict(HOLDS, why)
    if any(p in slower for ps in conditions.values() for p in ps):
        return Verdict(CONDITION, why)
    return Verdict(NOT_HERE if faster else Holds.UNRESOLVED, why)


CLAIM = Claim(
    id="overhead", statement="Dynamic execution can be slower with large batches or highly repetitive operations.",
    experiment=f"Eager and compiled forwards of the RNN and the Transformer over batch sizes {BATCHES} x lengths "
               f"{LENGTHS}, with the share of eager's time that is the framework's per-op overhead.",
    reproduce="Batching lab tab (compile the strategies)", measure=measure_claim, judge=judge)
