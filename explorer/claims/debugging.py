"""Claim 4: dynamic graphs make debugging easier. The debugging lab's shape bug, eagerly and compiled: the line
each traceback names last, its length, and the seconds to the error."""

from __future__ import annotations

from collections.abc import Iterator

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
    Workers,
    duration,
    times,
)
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.progress import Progress
from explorer.labs.debug import DebugResult, ModeOutcome, run_debug
from explorer.sources.registry import make_config
from models.bugs import BUGS

MODEL, BUG = "transformer", "shape"
MODES = ("eager", "compiled (inductor)")
QUICK_MODES = ("eager", "compiled (eager)")


def _named(m: ModeOutcome) -> bool:
    """Whether the traceback's last line of the user's is the injected one."""
    return bool(m.failure and BUGS[BUG].marker in m.failure.source)


def measure(w: Workers) -> Iterator[Progress | Evidence]:
    result: DebugResult | None = None
    for item in run_debug(w.compile, MODEL, make_config(MODEL), BUG, DEFAULT_TEXT, list(QUICK_MODES if w.quick
                                                                                      else MODES)):
        if isinstance(item, DebugResult):
            result = item
        else:
            yield item
    assert result is not None
    eager, compiled = result.modes
    numbers: dict[str, float] = {}
    shown = []
    for key, m in (("eager", eager), ("compiled", compiled)):
        numbers[f"{key}.failed"] = float(m.failed)
        numbers[f"{key}.named"] = float(_named(m))
        if m.seconds is None:  # the worker stopped: not measured, which is not zero
            numbers[f"{key}.unmeasured"] = 1.0
            shown.append((m.mode, "not measured", m.failure.message if m.failure else ""))
            continue
        numbers[f"{key}.seconds"] = m.seconds
        if m.failure:
            numbers[f"{key}.frames"], numbers[f"{key}.lines"] = m.failure.frames, m.failure.lines
            shown.append((m.mode, f"{m.failure.lines} lines", f"{m.failure.frames} frames, {duration(m.seconds)} to "
                          f"the error; names {m.failure.where or 'no line of yours'}: {m.failure.exception}"))
        else:
            shown.append((m.mode, "no error", duration(m.seconds)))
    failed = [m for m in (eager, compiled) if m.failure and m.seconds is not None]
    chart = Chart("bar", f"The same bug ({BUGS[BUG].title}), eager vs compiled", "mode", "traceback lines",
                  [Series("traceback lines", [m.mode for m in failed], [m.failure.lines for m in failed],  # type: ignore[union-attr]
                          text=[m.failure.where for m in failed]),  # type: ignore[union-attr]
                   Series("seconds to the error", [m.mode for m in failed], [m.seconds for m in failed], axis="y2")],
                  y2_title="seconds")
    notes = [f"{MODEL} at its default config, bug {BUG!r} ({BUGS[BUG].what}), one train step on the default text "
             f"({result.tokens} tokens); compiled in the compile worker with a fresh dynamo state, so its seconds "
             "include tracing"]
    yield Evidence(numbers, shown, chart, notes)


def judge(x: dict[str, float]) -> Verdict:
    if unmeasured := [k for k in ("eager", "compiled") if x.get(f"{k}.unmeasured")]:
        return Verdict(Holds.UNRESOLVED, f"the {' and '.join(unmeasured)} run did not finish (its worker stopped): "
                                   "nothing to compare")
    if not x["eager.failed"]:
        return Verdict(NOT_HERE, "the bug raised nothing eagerly, so there was no error to point at")
    if not x["eager.named"]:
        return Verdict(NOT_HERE, "eager's traceback did not end on the injected line")
    if not x["compiled.failed"]:
        return Verdict(CONDITION, "eager names the line; compiled raised nothing, so the bug passed unseen there")
    longer = x["compiled.lines"] / x["eager.lines"]
    said = (f"eager names the injected line in {x['eager.lines']:.0f} lines after {duration(x['eager.seconds'])}; "
            f"compiled {'names it too' if x['compiled.named'] else 'does not name it'} in {x['compiled.lines']:.0f} "
            f"lines ({times(longer)} as long) after {duration(x['compiled.seconds'])} (the seconds are one run each, "
            "shown, not judged: the verdict reads the tracebacks)")
    if longer > 2:
        return Verdict(HOLDS, said)
    return Verdict(CONDITION, f"{said}: the gap is small here")


CLAIM = Claim(
    id="debugging", statement="Dynamic graphs make debugging easier.",
    experiment=f"The debugging lab's shape bug on the {MODEL}: one train step eagerly and under torch.compile "
               "(inductor); the line each traceback names last, its length, and the seconds to the error.",
    reproduce="Debugging lab tab (bug: shape)", measure=measure, judge=judge)
