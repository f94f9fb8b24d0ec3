"""Claim 7: static graphs deploy more easily. The deployment lab's routes on every model as written: which
artefacts work, which fail loudly, which are silently wrong, and how fast the working ones run."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

from explorer.claims.chosen import Chosen, by_model
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
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.progress import Progress
from explorer.labs.deploy import DEFAULT_LENGTHS, LOUD, SILENT, WORKER, WORKS, DeployResult, run_deploy
from explorer.sources.registry import make_config
from explorer.workers.protocol import Workers
from models import ZOO

ROUTES = ("jit.trace", "export", "onnx")
OUTCOMES = {WORKS: 1.0, LOUD: 0.0, SILENT: -1.0}  # numbers the verdict reads: -1 is the one to fear


def _measure(w: Workers, chosen: list[Chosen]) -> Iterator[Progress | Evidence]:
    numbers: dict[str, float] = {}
    series: dict[str, Series] = {}
    models = [c.name for c in chosen]
    with tempfile.TemporaryDirectory(prefix="graph-explorer-claims-") as out:  # no download is kept
        for i, c in enumerate(chosen, 1):
            model = c.name
            result: DeployResult | None = None
            for item in run_deploy(w[WORKER.name], model, make_config(model, c.values), DEFAULT_TEXT,
                                   list(DEFAULT_LENGTHS), list(ROUTES[:2] if w.quick else ROUTES), out):
                if isinstance(item, DeployResult):
                    result = item
                else:
                    yield Progress(item.elapsed_s, f"model {i} of {len(chosen)}, {model}: {item.phase}")
            assert result is not None
            for r in result.routes:
                numbers[f"{model}.{r.route}.outcome"] = OUTCOMES.get(r.outcome, 0.0)
                if r.outcome == WORKS and r.comparison is not None:
                    numbers |= pair_numbers(f"{model}.{r.route}.speedup", r.comparison)
                s = series.setdefault(r.route, Series(r.route, [], [], text=[]))
                s.x.append(model)
                works = r.outcome == WORKS and r.speedup
                s.y.append(r.speedup if works else None)
                # no word under a missing bar: twelve side by side ran into each other; the cards say each outcome
                s.text.append(times(r.speedup) if works else "")  # type: ignore[union-attr]
    chart = Chart("bar", "Deployed artefact's speed against eager (no bar: the route fails or answers wrong, as "
                  "its model's card says)", "model", "eager time / artefact time", list(series.values()))
    shown = [_card(numbers, m) for m in models]
    lengths = ", ".join(map(str, DEFAULT_LENGTHS))
    notes = [f"each model at its default config, frozen at the default text and checked at {lengths} tokens and on "
             "another text of the same length, in the deployment worker; speed at the default text, "
             "timed in interleaved pairs with eager (the ratio with its 95% interval)"]
    yield Evidence(numbers, shown, chart, notes)


def _card(x: dict[str, float], model: str) -> tuple[str, str, str]:
    by = {r: x[f"{model}.{r}.outcome"] for r in ROUTES if f"{model}.{r}.outcome" in x}
    word = {1.0: "works", 0.0: "fails", -1.0: "silently wrong"}
    working = [r for r, v in by.items() if v == 1.0]
    fastest = max(working, key=lambda r: x.get(f"{model}.{r}.speedup", 0.0), default=None)
    timed = fastest is not None and f"{model}.{fastest}.speedup" in x
    value = f"{fastest}, {times(x[f'{model}.{fastest}.speedup'])} eager's speed" if timed else \
        fastest or "no route works"
    speed = f" ({fastest} against eager: {interval(x, f'{model}.{fastest}.speedup')})" if timed else ""
    return model, value, "; ".join(f"{r} {word[v]}" for r, v in by.items()) + speed


def judge(x: dict[str, float]) -> Verdict:
    models = sorted({k.split(".")[0] for k in x})
    exported = [m for m in models if any(x.get(f"{m}.{r}.outcome") == 1.0 for r in ("export", "onnx"))]
    silent = sorted({f"{r} of {m}" for m in models for r in ROUTES if x.get(f"{m}.{r}.outcome") == -1.0})
    rest = [m for m in models if m not in exported]
    fear = f"; silently wrong: {', '.join(silent)}" if silent else ""
    if not exported:
        return Verdict(NOT_HERE, f"no model exports as written{fear}")
    if rest:
        verb = "exports" if len(exported) == 1 else "export"
        return Verdict(CONDITION, f"for some models: {', '.join(exported)} {verb} as written (torch.export or "
                                  f"ONNX works and answers right at every length checked), {', '.join(rest)} do "
                                  f"not (each route's error is in the Deployment lab){fear}")
    return Verdict(HOLDS, f"every model exports as written (torch.export or ONNX works and answers right at every "
                          f"length checked){fear}")


CLAIM = Claim(
    id="deploying", statement="Static graphs deploy more easily.",
    experiment="Every model as written, frozen by jit.trace, torch.export and ONNX (run by ONNX Runtime), each "
               "artefact checked against eager at other lengths and on another text.",
    reproduce="Deployment lab tab", judge=judge, **by_model(_measure, tuple(ZOO), ("transformer", "tree")))
