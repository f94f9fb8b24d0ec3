"""Claim 8: multi-device training with dynamic graphs has its own problems. The multi-process lab's
unused-parameters scenario: early-exit ranks that stop at different depths, under plain DDP, with
find_unused_parameters, and what that costs when nothing is unused."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.claims.evidence import (
    CONDITION,
    HOLDS,
    NOT_HERE,
    Chart,
    Claim,
    Evidence,
    Series,
    Verdict,
    interval,
    pair_numbers,
    times,
)
from explorer.core.progress import Progress
from explorer.eager.compare import Comparison
from explorer.labs.ddp import MIN_STEPS, PHASES, TOLERANCE, WORKER, DdpResult, WorldRun, ddp_setup, run_ddp
from explorer.sources.registry import make_config
from explorer.workers.protocol import Workers

MODEL, WORLD = "early_exit", 2
PLAIN, FIND_UNUSED, _ = PHASES


def _phase(run: WorldRun, phase: str) -> tuple[float, float]:
    """(raised: 1/0 on any rank, the first step's largest gradient error against an exact all-reduce, -1 if
    none was measured)."""
    reports = [r.report for r in run.ranks if r.report]
    raised = any(rep.values.get(f"{phase}: error") for rep in reports) or any(r.state != "finished" for r in run.ranks)
    errors = [e for rep in reports if (e := rep.values.get(f"{phase}: gradient error")) is not None]
    return float(raised), max(errors, default=-1.0)


def measure(w: Workers) -> Iterator[Progress | Evidence]:
    setup = ddp_setup("unused", MODEL, make_config(MODEL), WORLD, MIN_STEPS if w.quick else 6)
    result: DdpResult | None = None
    for item in run_ddp(w[WORKER.name], "unused", setup):
        if isinstance(item, DdpResult):
            result = item
        else:
            yield item
    assert result is not None
    main = result.runs[0]
    depths = [r.report.values.get("depth") for r in main.ranks if r.report]
    numbers = {"depths_differ": float(len(set(depths)) > 1)}
    for key, phase in (("plain", PLAIN), ("find_unused", FIND_UNUSED)):
        numbers[f"{key}.raised"], numbers[f"{key}.grad_error"] = _phase(main, phase)
    rows = {c.what: c for c in result.costs}
    for key, what in (("plain_ms", "nothing unused, plain DDP: step"),
                      ("find_unused_ms", "nothing unused, find_unused_parameters=True: step"),
                      ("alone_ms", "nothing unused, one process alone: step")):
        if what in rows:
            numbers[key] = rows[what].median_ms
    costs = [c for c in result.costs if c.what.startswith("nothing unused")]
    settings = [c.what.split(", ")[1].removesuffix(": step") for c in costs]
    chart = Chart("bar", f"A training step, {WORLD} processes, nothing unused", "setting", "ms (median, bars = IQR)",
                  [Series("step", settings, [c.median_ms for c in costs], [c.q3_ms - c.q1_ms for c in costs])])

    def said(key: str) -> str:
        err = numbers[f"{key}.grad_error"]
        grads = "" if err < 0 else f"first step's gradients {'exact' if err <= TOLERANCE else f'off by {err:.2g}'}; "
        return grads + ("then raised" if numbers[f"{key}.raised"] else "every step completed")

    shown = [("exit depths per rank", ", ".join(map(str, depths)), "each rank's own sentence"),
             ("plain DDP", "raised" if numbers["plain.raised"] else "ran", said("plain")),
             ("find_unused_parameters", "raised" if numbers["find_unused.raised"] else "ran", said("find_unused"))]
    plain, unused = result.runs[1].slowest("plain DDP ms"), result.runs[1].slowest("find_unused_parameters=True ms")
    if plain and len(plain) == len(unused):  # interleaved step by step, ranks lined up: pairs
        numbers |= pair_numbers("find_unused_cost", Comparison.of("find_unused_parameters", "plain DDP", unused, plain))
        shown.append(("its cost", times(numbers["find_unused_cost"]),
                      f"{numbers['find_unused_ms']:.1f} vs {numbers['plain_ms']:.1f} ms a step with nothing unused "
                      f"({interval(numbers, 'find_unused_cost')}, each a step of each)"))
    notes = [f"{MODEL} at its default config on {WORLD} processes (gloo on loopback, one core and thread each), "
             "every exit head's loss summed; gradients checked against an exact all-reduce of each rank's own; "
             "step times are the slowest rank's, quartiles over steps; plain DDP and find_unused_parameters "
             "interleaved step by step, the order rotated, every rank lined up by a barrier before each step",
             result.verdict]
    yield Evidence(numbers, shown, chart, notes)


def judge(x: dict[str, float]) -> Verdict:
    if not x["depths_differ"]:
        return Verdict(NOT_HERE, "every rank exited at the same depth, so no rank left parameters unused")
    plain_wrong = x["plain.raised"] or x["plain.grad_error"] > TOLERANCE
    if not plain_wrong:
        return Verdict(NOT_HERE, "plain DDP trained ranks of different depths without an error and with exact "
                                 "gradients")
    fixed = not x["find_unused.raised"] and 0 <= x["find_unused.grad_error"] <= TOLERANCE
    what = ("raised" if x["plain.raised"] else "") + (" after a silently wrong step" if x["plain.grad_error"] >
                                                      TOLERANCE else "")
    cost = ""
    if "find_unused_cost" in x:
        word = ("it costs" if x["find_unused_cost_low"] > 1 else "it saves" if x["find_unused_cost_high"] < 1
                else "no cost resolved at this noise")
        cost = (f"; when nothing is unused, its step against plain DDP's: {word} "
                f"({interval(x, 'find_unused_cost')})")
    if fixed:
        return Verdict(HOLDS, f"when ranks' graphs differ, plain DDP {what.strip()}; find_unused_parameters gives "
                              f"exact gradients{cost}")
    return Verdict(CONDITION, f"plain DDP {what.strip()}, and find_unused_parameters did not fix it here")


CLAIM = Claim(
    id="distributed", statement="Multi-device training with dynamic graphs has its own problems.",
    experiment=f"Early exit on {WORLD} processes (DDP over gloo), each rank exiting at another depth: plain DDP, "
               "then find_unused_parameters; and the cost of find_unused_parameters when nothing is unused.",
    reproduce="Multi-process lab tab (scenario: unused parameters)", measure=measure, judge=judge)
