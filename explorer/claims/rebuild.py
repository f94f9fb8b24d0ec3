"""Claim 3: changing the architecture needs no rebuild of the whole model. In eager mode a new architecture is
a new Python object and the next call records its graph; under torch.compile the same change is a recompile."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.claims.compiled import eager_then_compiled
from explorer.claims.evidence import CONDITION, HOLDS, NOT_HERE, Chart, Claim, Evidence, Series, Verdict, times
from explorer.compile.track import CompiledRun
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import tokenize
from explorer.core.limits import FORWARD_BUDGET_S
from explorer.core.progress import Progress
from explorer.eager.capture import capture_run
from explorer.eager.timing import measure as time_it
from explorer.runs.session import Session
from explorer.serving.statelink import LinkState
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Workers
from models.config import config_dict

MODEL = "transformer"
BEFORE, AFTER = {"layers": 2}, {"layers": 3}
MUCH_FASTER = 10  # eager's new graph at least this many times sooner than the recompile: the claim holds outright


def measure(w: Workers) -> Iterator[Progress | Evidence]:
    session = Session()
    runs: list[CompiledRun] = []
    for values in (BEFORE, AFTER):
        for item in eager_then_compiled(session, w, MODEL, values):
            if isinstance(item, Progress):
                yield item
            else:
                runs.append(item[1])
    first, change = runs
    yield Progress.said("eager: recording the new architecture's graph, and building it, each timed")
    ids = tokenize(DEFAULT_TEXT).ids
    config = make_config(MODEL, AFTER)
    budget = FORWARD_BUDGET_S * (1 if w.quick else 5)
    model = build_model(MODEL, config)  # built once: both sides build the new modules; what differs is after
    eager = time_it("the new architecture's graph", lambda: capture_run(model, ids), budget)
    build = time_it("building the new architecture", lambda: build_model(MODEL, config), budget)
    cached = "hit" in change.events[0].cache if change.events else False
    numbers = {"eager_new_graph_ms": eager.median_ms, "eager_slowest_ms": eager.max_ms, "eager_runs": eager.runs,
               "build_ms": build.median_ms, "recompile_s": change.compile_s,
               "recompiles": len(change.events), "recompile_cache_hit": float(cached),
               "first_compile_s": first.compile_s}
    reasons = "; ".join(sorted({e.reason for e in change.events})) or "none"
    chart = Chart("bar", f"{MODEL}: layers {BEFORE['layers']} → {AFTER['layers']}", "what the change costs",
                  "ms (log scale)", [Series("time", ["eager: record the new graph", "compiled: recompile",
                                                     "compiled: first compile"],
                                            [eager.median_ms, change.compile_s * 1e3, first.compile_s * 1e3],
                                            spread=[eager.iqr_ms, 0.0, 0.0])], log_y=True)
    shown = [("eager: new graph", f"{eager.median_ms:.1f} ms", f"record the graph of one forward and its loss (no "
              f"backward) on the new architecture; {eager.spread()}; building it took {build.median_ms:.1f} ms "
              "more, on either side"),
             ("compiled: recompile", f"{change.compile_s:.2f} s", f"{len(change.events)} compile(s); inductor's "
              f"cache {'served it' if cached else 'missed'}"),
             ("ratio", times(change.compile_s * 1e3 / eager.median_ms) if eager.median_ms else "—",
              "the recompile against eager's new graph")]
    notes = [f"{MODEL} at its default config with layers {BEFORE['layers']} then {AFTER['layers']}, on the default "
             "text; compile seconds are dynamo's own for the change's compiles; eager timed with "
             "torch.utils.benchmark on a model built once (building the new modules costs both sides the same, and "
             "is timed apart)", f"why it compiled: {reasons}"]
    yield Evidence(numbers, shown, chart, notes)


def judge(x: dict[str, float]) -> Verdict:
    eager_s = x["eager_new_graph_ms"] / 1e3
    if x["recompiles"] == 0:
        return Verdict(NOT_HERE, "the compiled model did not recompile for the change, so there was nothing to "
                                 "rebuild on either side")
    ratio = x["recompile_s"] / eager_s if eager_s else float("inf")
    # the recompile is one event (its seconds dynamo's own); eager's slowest run bounds what noise could do to it
    slowest = x.get("eager_slowest_ms", x["eager_new_graph_ms"]) / 1e3
    bound = x["recompile_s"] / slowest if slowest else float("inf")
    cache = " (served by inductor's cache on this server)" if x["recompile_cache_hit"] else ""
    runs = f"median of {x['eager_runs']:.0f} runs, the slowest {slowest * 1e3:.1f} ms" if "eager_runs" in x else ""
    said = (f"eager records the new graph in {x['eager_new_graph_ms']:.1f} ms ({runs}); torch.compile recompiles in "
            f"{x['recompile_s']:.2f} s{cache} ({x['recompiles']:.0f} compile(s), one change), {times(ratio)} as long "
            f"({times(bound)} against eager's slowest run)")
    if bound >= MUCH_FASTER:
        return Verdict(HOLDS, said)
    if bound > 1:
        why = "inductor's cache served the recompile" if x["recompile_cache_hit"] else \
            f"the recompile missed inductor's cache and was still under {MUCH_FASTER}x"
        return Verdict(CONDITION, f"{said}: {why}")
    return Verdict(NOT_HERE, said)


CLAIM = Claim(
    id="rebuild", statement="Changing the architecture needs no rebuild of the whole model.",
    experiment=f"The {MODEL} with {BEFORE['layers']} then {AFTER['layers']} layers: the time eager mode takes to "
               "build the new model and record its graph, against the recompile it triggers under torch.compile.",
    reproduce=LinkState(MODEL, config_dict(make_config(MODEL, AFTER)), DEFAULT_TEXT, compile=True).query(),
    measure=measure, judge=judge)
