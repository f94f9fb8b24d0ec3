"""Claim 5: static graphs can be faster. Each model's default input, eager and compiled with inductor, timed
back to back in the compile worker; the compile seconds it cost and the calls after which they are paid back."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.claims.chosen import Chosen, by_model
from explorer.claims.compiled import eager_then_compiled, options
from explorer.claims.evidence import (
    CONDITION,
    HOLDS,
    NOT_HERE,
    Chart,
    Claim,
    Evidence,
    Holds,
    Series,
    Verdict,
    interval,
    pair_numbers,
    times,
)
from explorer.compile.observe import cache_served
from explorer.compile.track import CompiledRun
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.progress import Progress
from explorer.eager.compare import Estimate
from explorer.runs.session import Session
from explorer.serving.statelink import LinkState
from explorer.sources.registry import make_config
from explorer.workers.protocol import Workers
from models import ZOO
from models.config import config_dict


def _measure(w: Workers, models: list[Chosen]) -> Iterator[Progress | Evidence]:
    session = Session()
    numbers: dict[str, float] = {}
    eager = Series("eager", [], [], spread=[])
    compiled = Series(f"compiled ({options(w.quick).backend})", [], [], spread=[])
    shown = []
    for i, chosen in enumerate(models, 1):
        model = chosen.name
        run: CompiledRun | None = None
        for item in eager_then_compiled(session, w, model, chosen.values):
            if isinstance(item, Progress):
                yield Progress(item.elapsed_s, f"model {i} of {len(models)}, {item.phase}")
            else:
                _, run = item
        assert run is not None
        numbers[f"{model}.compile_s"] = run.total_compile_s
        # served by inductor's caches on this server, or compiled cold: the break-even differs by 10x and more
        # (every compile the break-even pays back, as the card counts them: the shared rule of what a cache served)
        numbers[f"{model}.cached"] = float(bool(run.caches) and cache_served(run.caches) == len(run.caches))
        pair = run.comparison
        if run.speedup is None or pair is None or run.eager is None or run.compiled is None:
            numbers[f"{model}.ran_compiled"] = 0.0  # counted: a model whose compiled code never ran is not a win
            shown.append((model, "no compiled code ran", run.fallback or ""))
            continue
        numbers |= {f"{model}.ran_compiled": 1.0} | pair_numbers(f"{model}.speedup", pair)
        if run.break_even is not None:
            numbers |= {f"{model}.break_even_calls": run.break_even.value,
                        f"{model}.break_even_low": run.break_even.low, f"{model}.break_even_high": run.break_even.high}
        for series, m in ((eager, run.eager), (compiled, run.compiled)):
            series.x.append(model)
            series.y.append(m.median_ms)
            series.spread.append(m.iqr_ms)  # type: ignore[union-attr]
        paid = f"paid back after {run.break_even.said()} calls" if run.break_even else "not paid back"
        paid += f" (compiles: {run.cache})"
        shown.append((model, f"{times(pair.ratio)} [{pair.interval()}]",
                      f"{run.eager.median_ms:.2f} → {run.compiled.median_ms:.2f} ms over {pair.pairs} pairs; "
                      f"{run.total_compile_s:.1f} s of compiling, {paid}"))
    chart = Chart("bar", "Forward of the default text: eager vs compiled", "model", "ms (median, bars = IQR)",
                  [eager, compiled])
    notes = ["forward without grad, eager and compiled timed in interleaved pairs in the compile worker; the ratio is "
             "the median pair's with its distribution-free 95% interval (at least 8 pairs), and a model counts as "
             "faster compiled only when the whole interval is above 1; compile seconds are dynamo's own, each model's "
             "said cold or served by inductor's caches on this server"]
    yield Evidence(numbers, shown, chart, notes)


def judge(x: dict[str, float]) -> Verdict:
    """Faster, slower or not resolved, per model, by the speed-up's whole interval; a model whose compiled code
    never ran is named, and keeps the verdict from "every model"."""
    models = [k.split(".")[0] for k in x if k.endswith(".ran_compiled")]
    timed = [m for m in models if x[f"{m}.ran_compiled"]]
    faster = [m for m in timed if x[f"{m}.speedup_low"] > 1]
    slower = [m for m in timed if x[f"{m}.speedup_high"] < 1]
    unresolved = [m for m in timed if m not in faster and m not in slower]
    never = [m for m in models if m not in timed]

    def say(ms: list[str], paid: bool = False) -> str:
        def one(m: str) -> str:
            calls = x.get(f"{m}.break_even_calls")
            served = " of cache-served compiling" if x.get(f"{m}.cached") else " of cold compiling"
            after = calls and Estimate(calls, x[f"{m}.break_even_low"], x[f"{m}.break_even_high"]).said()
            back = (f", paid back after {after} calls{served}" if calls else ", not paid back") if paid else ""
            return f"{m} {interval(x, f'{m}.speedup')}{back}"
        return "; ".join(map(one, ms))

    rest = "".join([f"; slower compiled: {say(slower)}" if slower else "",
                    f"; not resolved on this machine today: {say(unresolved)}" if unresolved else "",
                    f"; no compiled code ran for {', '.join(never)}" if never else ""])
    if not faster and not slower:
        return Verdict(Holds.UNRESOLVED,
                       f"no model's speed-up was resolved{rest}" if models else "no model was measured")
    if not faster:
        return Verdict(NOT_HERE, f"no model ran faster compiled by its whole interval{rest}")
    if rest:
        return Verdict(CONDITION, f"for {say(faster, paid=True)}{rest}; the compile seconds come first")
    return Verdict(HOLDS, f"every model ran faster compiled ({say(faster, paid=True)})")


CLAIM = Claim(
    id="speed", statement="Static graphs can be faster.",
    experiment="Each model's default text, eager and compiled with torch.compile (inductor), timed back to back; "
               "the compile seconds and the calls after which they are paid back.",
    reproduce=LinkState("transformer", config_dict(make_config("transformer")), DEFAULT_TEXT, compile=True).query(),
    judge=judge, **by_model(_measure, tuple(ZOO), ("transformer",)))
