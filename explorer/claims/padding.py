"""Claim 2: sentences of different lengths can be processed without padding them first, which is more
efficient. The batching lab's strategies, eagerly, on one Zipf batch, per model."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.claims.chosen import Chosen, by_model
from explorer.claims.evidence import (
    CONDITION,
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
    times,
)
from explorer.core.batches import generate_batch
from explorer.core.progress import Progress
from explorer.labs.batching import STRATEGIES, LabResult, iter_lab
from explorer.sources.contract import ModelSource
from explorer.sources.registry import build_model, make_config
from explorer.workers.protocol import Workers
from models import ZOO

BATCH = {"n": 64, "distribution": "zipf", "min_len": 5, "max_len": 300, "seed": 0}  # the lab's default batch
BUCKET_WIDTH = 32
PADDING_FREE = ("loop", "pack", "nested")  # no position computed for a pad


def _lab(chosen: Chosen, texts: list[str], budget_scale: float) -> Iterator[Progress | LabResult]:
    model_name = chosen.name
    model = build_model(model_name, make_config(model_name, chosen.values))
    for item in iter_lab(model, texts, BUCKET_WIDTH, budget_scale):
        yield f"{model_name}: {item}" if isinstance(item, Progress) else item


def applies(source: ModelSource) -> str | None:
    """The strategies run padded batches: the model must take `forward(ids, lengths=None)`."""
    return None if source.supports.batched else "its forward does not take `forward(ids, lengths=None)` (the " \
        "batching lab says what to add)"


def _measure(w: Workers, chosen: list[Chosen]) -> Iterator[Progress | Evidence]:
    batch = BATCH | ({"n": 6, "max_len": 40} if w.quick else {})
    texts = generate_batch(batch["n"], batch["distribution"], batch["min_len"], batch["max_len"], batch["seed"])
    numbers: dict[str, float] = {}
    series = {name: Series(STRATEGIES[name][0], [], [], spread=[]) for name in STRATEGIES}
    models = [c.name for c in chosen]
    for c in chosen:
        model_name = c.name
        *_, result = _lab(c, texts, 0.25 if w.quick else 1.0)
        assert isinstance(result, LabResult)
        for s in result.strategies:
            if s.agrees and s.forward:  # a strategy that ran and computed what the loop computes
                numbers[f"{model_name}.{s.name}_ms"] = s.forward.median_ms
                series[s.name].x.append(model_name)
                series[s.name].y.append(s.forward.median_ms)
                series[s.name].spread.append(s.forward.iqr_ms)  # type: ignore[union-attr]
        pad = result.strategy("pad")
        if pad.agrees:
            numbers[f"{model_name}.pad_fraction"] = pad.padding_fraction or 0.0
        numbers |= _paired(result, model_name)
    lengths = sorted(len(t.encode()) for t in texts)
    chart = Chart("bar", f"Forward over the batch ({len(texts)} sentences), per strategy", "model",
                  "ms (median, bars = IQR)", [s for s in series.values() if s.x], log_y=True)
    shown = [_card(numbers, m) for m in models]
    notes = [f"{len(texts)} generated sentences, Zipf lengths drawn from {batch['min_len']}-{batch['max_len']} tokens "
             f"(this batch: {lengths[0]}-{lengths[-1]}, median {lengths[len(lengths) // 2]}), "
             f"bucket width {BUCKET_WIDTH}; eager forwards without grad, every strategy's timed together round by "
             "round (the order rotated), each checked against the per-sample loop (one that disagrees or cannot run "
             "is left out); the verdict reads the paired 95% interval of the fastest padded against the fastest "
             "padding-free strategy"]
    yield Evidence(numbers, shown, chart, notes)


def _paired(result: LabResult, model: str) -> dict[str, float]:
    """The fastest padded strategy against the fastest padding-free one, and the loop against the fastest of all,
    each as the ratio of paired medians (above 1: the second is faster) with its interval."""
    ranked = result.ranked()
    free = [s.name for s in ranked if s.name in PADDING_FREE]
    padded = [s.name for s in ranked if s.name not in PADDING_FREE]
    pairs = {"padded_over_free": (padded[0], free[0])} if free and padded else {}
    if ranked and ranked[0].name != "loop" and any(s.name == "loop" for s in ranked):
        pairs["loop_over_best"] = ("loop", ranked[0].name)
    out: dict[str, float] = {}
    for key, (a, b) in pairs.items():
        out |= pair_numbers(f"{model}.{key}", result.comparison(a, b))
    return out


def _card(x: dict[str, float], model: str) -> tuple[str, str, str]:
    name, best_ms = _best(x, model)
    pad = x.get(f"{model}.pad_ms")
    if pad is None:
        return model, STRATEGIES[name][0], f"{best_ms:.2f} ms; no other strategy ran and agreed with it"
    versus = f"padded to the longest: {times(pad / best_ms)} as long" if name != "pad" else "padded"
    return (model, STRATEGIES[name][0], f"{best_ms:.2f} ms; {versus}, {x[f'{model}.pad_fraction']:.0%} of the "
            "padded batch is pads")


def _best(x: dict[str, float], model: str, among: tuple[str, ...] = tuple(STRATEGIES)) -> tuple[str, float]:
    """(strategy, ms) of the fastest of `among` that ran correctly on `model`; ("", inf) if none did."""
    timed = [(x[f"{model}.{s}_ms"], s) for s in among if f"{model}.{s}_ms" in x]
    ms, name = min(timed, default=(float("inf"), ""))
    return name, ms


def _ran(x: dict[str, float], model: str) -> list[str]:
    return [s for s in STRATEGIES if f"{model}.{s}_ms" in x]


def judge(x: dict[str, float]) -> Verdict:
    """Per model where a padded and a padding-free strategy both compute the loop's answer: which of the two
    fastest is faster, by the whole interval of their paired ratio, or not resolved."""
    models = sorted({k.split(".")[0] for k in x})
    compared = [m for m in models if f"{m}.padded_over_free" in x]
    free_wins = [m for m in compared if x[f"{m}.padded_over_free_low"] > 1]
    padded_wins = [m for m in compared if x[f"{m}.padded_over_free_high"] < 1]
    unresolved = [m for m in compared if m not in free_wins and m not in padded_wins]

    def pair(m: str) -> str:
        """The slower of the two against the faster (by median), the ratio above 1 and its interval."""
        free = STRATEGIES[_best(x, m, PADDING_FREE)[0]][0]
        padded = STRATEGIES[_best(x, m, tuple(s for s in STRATEGIES if s not in PADDING_FREE))[0]][0]
        key = f"{m}.padded_over_free"
        if x[key] >= 1:  # padded / padding-free: the padded one took this many times as long
            return f"{m} ({padded} against {free}: {interval(x, key)})"
        return f"{m} ({free} against {padded}: {interval(x, key, inverted=True)})"

    said = "; ".join(filter(None, [
        free_wins and f"padding-free is faster for {', '.join(map(pair, free_wins))}",
        padded_wins and f"padded is faster for {', '.join(map(pair, padded_wins))}",
        unresolved and f"not resolved on this machine today for {', '.join(map(pair, unresolved))}"]))
    slow_loop = [m for m in models if f"{m}.loop_over_best" in x and x[f"{m}.loop_over_best_low"] > 1]
    notes = "".join(f" The per-sample loop, which needs no padding either, is slower than {m}'s fastest strategy "
                    f"({interval(x, f'{m}.loop_over_best')})." for m in slow_loop)
    only_loop = [m for m in models if m not in compared]
    notes += (f" Only the loop computes {' and '.join(only_loop)} correctly here (their per-input decisions "
              "cannot be padded): nothing to compare." if only_loop else "")
    if not compared:
        return Verdict(NOT_HERE, f"no model ran both a padded and a padding-free strategy correctly.{notes}")
    if len(free_wins) == len(compared):
        return Verdict(HOLDS, f"{said}.{notes}")
    if free_wins:
        return Verdict(CONDITION, f"{said}.{notes}")
    return Verdict(NOT_HERE if padded_wins else UNRESOLVED, f"{said}.{notes}")


CLAIM = Claim(
    id="padding", statement="Sentences of different lengths can be processed without padding them first, which is "
                            "more efficient.",
    experiment="The batching lab on one batch of 64 Zipf-length sentences, per model: pad to the longest, bucket, "
               "pack_padded_sequence, nested jagged tensors and the plain per-sample loop, eagerly.",
    reproduce="Batching lab tab (generated, zipf, 64 sentences, 5-300 tokens)", judge=judge,
    applies=applies, **by_model(_measure, tuple(ZOO), ("rnn", "tree")))
