"""Claim 10: whether a new input length makes a compiled model recompile can be known before it runs. The shapes
lab's job on each model: compiled at 8 then 16 tokens, five lengths predicted from the cached graphs' guards, then
run, and each prediction checked against what dynamo did."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.claims.chosen import Chosen, by_model
from explorer.claims.evidence import CONDITION, HOLDS, NOT_HERE, Chart, Claim, Evidence, Series, Verdict
from explorer.compile.options import CompileOptions
from explorer.core.progress import Progress
from explorer.labs.shapes import Outcome, ShapesJob, ShapesResult, run_shapes
from explorer.workers.protocol import Workers

COMPILED_AT = (8, 16)  # two lengths first: automatic dynamic has acted, as the shapes lab's default
LENGTHS = (12, 1, 40, 16, 90)  # the five the room predicts: between, one token, beyond, one compiled, far beyond


def _measure(w: Workers, models: list[Chosen]) -> Iterator[Progress | Evidence]:
    numbers: dict[str, float] = {}
    predicted = Series("predicted from the guards", [], [])
    compiled = Series("compiled when run", [], [])
    shown = []
    for i, chosen in enumerate(models, 1):
        job = ShapesJob(chosen.name, dict(chosen.values), CompileOptions("eager"), COMPILED_AT, LENGTHS, ())
        result: ShapesResult | None = None
        for item in run_shapes(w, job):
            if isinstance(item, Progress):
                yield Progress(item.elapsed_s, f"model {i} of {len(models)}, {item.phase}")
            else:
                result = item
        assert result is not None
        m = chosen.name
        will = [q.predicted.length for q in result.requests if q.predicted.outcome is Outcome.COMPILES]
        did = [q.predicted.length for q in result.requests if q.did is Outcome.COMPILES]
        numbers |= {f"{m}.requests": len(result.requests), f"{m}.agreed": result.agreed,
                    f"{m}.predicted_compiles": len(will), f"{m}.compiles": len(did),
                    f"{m}.graphs": len(result.graphs), f"{m}.predict_ms": result.predict_s * 1e3}
        for series, n in ((predicted, len(will)), (compiled, len(did))):
            series.x.append(m)
            series.y.append(n)
        lengths = ", ".join(map(str, did)) or "none"
        shown.append((m, f"{len(did)} of {len(LENGTHS)} recompiled",
                      f"lengths that compiled: {lengths}; predicted before any ran, from {len(result.graphs)} cached "
                      f"graph(s), in {result.predict_s * 1e3:.1f} ms; {result.agreed} of {len(result.requests)} as "
                      "predicted"))
    chart = Chart("bar", f"Lengths {', '.join(map(str, LENGTHS))} after compiling at "
                  f"{' then '.join(map(str, COMPILED_AT))} tokens", "model", "graphs compiled",
                  [predicted, compiled])
    notes = [f"torch.compile (backend eager: the guards are dynamo's, the same for every backend) called at "
             f"{' then '.join(map(str, COMPILED_AT))} tokens; each of the lengths {', '.join(map(str, LENGTHS))} "
             "checked against the cached graphs with dynamo's own guard check before any ran (a length no graph "
             "accepts will compile one, which accepts that length only), then run, in order, in a fresh worker "
             "process; 'compiled' counts the compile events of the forward's own frame"]
    yield Evidence(numbers, shown, chart, notes)


def judge(x: dict[str, float]) -> Verdict:
    models = [k.split(".")[0] for k in x if k.endswith(".agreed")]
    if not models:
        return Verdict(NOT_HERE, "no model was measured")
    wrong = [m for m in models if x[f"{m}.agreed"] < x[f"{m}.requests"]]
    unread = [m for m in models if not x[f"{m}.graphs"]]
    each = "; ".join(f"{m}: {x[f'{m}.compiles']:.0f} of {x[f'{m}.requests']:.0f} lengths recompiled, "
                     f"{x[f'{m}.agreed']:.0f} as predicted" for m in models)
    if wrong:
        return Verdict(NOT_HERE, f"the guards mispredicted {', '.join(wrong)} ({each})")
    if unread:
        return Verdict(CONDITION, f"{each}; but dynamo compiled no graph of {', '.join(unread)}'s forward itself, so "
                                  "there every length runs eagerly and nothing was left to predict")
    return Verdict(HOLDS, f"every length did what the cached graphs' guards said before it ran ({each})")


CLAIM = Claim(
    id="recompile", statement="Which input lengths make a compiled model recompile can be known before they run.",
    experiment=f"Each model compiled at {' then '.join(map(str, COMPILED_AT))} tokens; the lengths "
               f"{', '.join(map(str, LENGTHS))} predicted from the cached graphs' guards, then run.",
    reproduce="Shapes lab tab (lengths: " + ", ".join(map(str, LENGTHS)) + ")", judge=judge,
    **by_model(_measure, ("transformer", "rnn"), ("transformer",)))
