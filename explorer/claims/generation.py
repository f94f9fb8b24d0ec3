"""Claim 9: a static key/value cache makes compiled generation cheaper than eager after K tokens. The generation
lab's decoder generates with a static cache and with a dynamic one, eagerly and compiled (inductor): K is the
compile's seconds over the time a compiled decode step saves, its interval from the per-token ratio's."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from explorer.claims.evidence import (
    HOLDS,
    NOT_HERE,
    UNRESOLVED,
    Chart,
    Claim,
    Evidence,
    Series,
    Verdict,
    interval,
    pair_numbers,
)
from explorer.compile.observe import cache_served, served_said
from explorer.core.progress import Progress
from explorer.eager.compare import MIN_PAIRS, Estimate, rounded
from explorer.labs.generate import GenerateResult, run_generate
from explorer.sources.registry import subject
from explorer.workers.protocol import Workers

MODEL = "decoder"
PROMPT = "The cat sat on the mat, and then"  # 32 bytes
TOKENS = 128
CACHES = ("static", "dynamic")


def evidence_of(result: GenerateResult) -> Evidence:
    numbers: dict[str, float] = {}
    eager, compiled = Series("eager", [], [], spread=[]), Series("compiled (inductor)", [], [], spread=[])
    shown = []
    for run in result.runs:
        c = result.per_token(run)
        if c is None:  # the compile failed: said in the notes
            continue
        key = run.cache
        compile_s = sum(x.seconds for x in run.compiles)
        eager_ms = statistics.median(c.a_ms)
        numbers |= pair_numbers(f"{key}.per_token", c) | {
            f"{key}.compile_s": compile_s, f"{key}.compiles": float(len(run.compiles)),
            f"{key}.cache_served": float(cache_served([x.cache for x in run.compiles])),
            f"{key}.eager_ms": eager_ms, f"{key}.compiled_ms": statistics.median(c.b_ms)}
        if k := result.break_even(run):  # a K only where compiled is faster by its interval
            numbers |= {f"{key}.k": k.value, f"{key}.k_low": k.low, f"{key}.k_high": k.high}
        for series, ms in ((eager, c.a_ms), (compiled, c.b_ms)):
            q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
            series.x.append(f"{key} cache")
            series.y.append(statistics.median(ms))
            series.spread.append(q[2] - q[0])  # type: ignore[union-attr]
        k = result.break_even(run)
        paid = (f"{rounded(k.value)} tokens" if k else "never (eager is faster)"
                if c.faster == "eager" else "not resolved")
        shown.append((f"{key} cache: pays off after", paid,
                      f"{compile_s:.1f} s of {len(run.compiles)} compile(s), {result.compiled_cache(run)}; "
                      + (f"K {k.said()} by the per-token interval; " if k else "") + "per token "
                      f"{interval(numbers, f'{key}.per_token')}" + (f"; {run.stance}" if run.stance else "")))
    chart = Chart("bar", "A decode step, eager and compiled", "key/value cache", "ms per token (median, bars = IQR)",
                  [eager, compiled])
    notes = [f"the zoo's decoder at its defaults, the prompt {PROMPT!r} and {result.tokens} generated tokens, "
             f"greedy; per cache, its first compiled generation compiles (the static one under fail_on_recompile from "
             f"its second decode step), then {result.repeats} warm generations of each side, interleaved on one core, "
             "each generation's mean decode step one eager/compiled pair (its steps share the machine's slow "
             "spells, so a generation is the independent unit). K is the compile's seconds (one measurement, in the "
             "compile worker as it was: the first inductor compile of a fresh worker also pays its toolchain's "
             "start; whether inductor's on-disk cache served each compile is said beside it) over the time a "
             "compiled step saves; its range comes from the per-token ratio's 95% interval.",
             *(f"compiling with the {r.cache} cache failed: {r.error}" for r in result.runs if r.error)]
    return Evidence(numbers, shown, chart, notes)


def measure(w: Workers) -> Iterator[Progress | Evidence]:
    tokens, repeats, backend = (6, 1, "eager") if w.quick else (TOKENS, MIN_PAIRS, "inductor")
    config = subject(MODEL).config  # its defaults
    for item in run_generate(w.compile, MODEL, config, PROMPT, tokens, list(CACHES), backend, repeats):
        yield item if isinstance(item, Progress) else evidence_of(item)


def served(x: dict[str, float], key: str) -> str:
    return served_said(int(x[f"{key}.cache_served"]), int(x[f"{key}.compiles"]))


def judge(x: dict[str, float]) -> Verdict:
    """Holds when the static cache's compiled decode step is faster by its whole interval (K is then finite), with
    K and its interval, and the dynamic cache's for comparison; does not hold when eager is faster by its whole
    interval; otherwise not resolved."""
    if "static.per_token" not in x:
        return Verdict(NOT_HERE, "the static cache's step did not compile here (see the notes)")
    said = f"per token, eager over compiled {interval(x, 'static.per_token')}"
    if x["static.per_token_high"] < 1:
        return Verdict(NOT_HERE, f"with a static cache, compiled decoding is slower than eager here: {said}")
    if x["static.per_token_low"] <= 1 or "static.k_high" not in x:
        return Verdict(UNRESOLVED, f"with a static cache, {said}: the interval includes 1, so no K")
    k = (f"after {Estimate(x['static.k'], x['static.k_low'], x['static.k_high']).said()} tokens (the range from the "
         f"per-token ratio's interval; the compile's seconds are one measurement), its {x['static.compile_s']:.1f} s "
         f"of {x['static.compiles']:.0f} compiles ({served(x, 'static')}) paid back by decode steps "
         f"{x['static.eager_ms']:.3f} -> {x['static.compiled_ms']:.3f} ms ({said})")
    if "dynamic.per_token" not in x:
        other = ""
    elif x["dynamic.per_token_low"] > 1 and "dynamic.k" in x:
        other = (f"; the dynamic cache ({x['dynamic.compiles']:.0f} compiles, {x['dynamic.compile_s']:.1f} s, "
                 f"{served(x, 'dynamic')}) after "
                 f"{Estimate(x['dynamic.k'], x['dynamic.k_low'], x['dynamic.k_high']).said()} tokens "
                 f"({interval(x, 'dynamic.per_token')})")
    else:
        other = ("; the dynamic cache's compiled step was not faster by its interval "
                 f"({interval(x, 'dynamic.per_token')})")
    return Verdict(HOLDS, k + other)


CLAIM = Claim(
    id="generation", statement="A static cache makes compiled generation cheaper than eager after K tokens.",
    experiment=f"The decoder generates {TOKENS} tokens after a 32-byte prompt with a static and a dynamic key/value "
               "cache, eagerly and compiled (inductor): the per-token ratio and the tokens that pay for the compile.",
    reproduce="Generation lab tab (compile: inductor)", measure=measure, judge=judge)
