"""Will a request recompile? Predicted from the graphs dynamo has cached, before anything runs.

Each request, in order, is checked against the cached graphs by their own guards (guards.failing). One that no
cached graph accepts is predicted to compile a new graph, unless the function already has `limit` graphs (dynamo's
recompile limit: it then runs the request eagerly). The rule for what a new graph accepts: its own length only. It
holds once automatic dynamic has acted (the lab compiles at two lengths first, so a dimension that can be dynamic
already is), and for a graph that specializes (an unrolled loop, 0/1 specialization); the lab then runs the requests
and shows where dynamo did otherwise."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum


class Outcome(Enum):
    REUSES = "reuses a graph"
    COMPILES = "compiles a graph"
    EAGER = "runs eagerly (recompile limit)"
    HELD = "runs eagerly (stance eager_on_recompile)"  # torch.compiler.set_stance: nothing new compiles
    REFUSED = "fails (stance fail_on_recompile)"  # the call raises where it would recompile
    SKIPPED = "runs eagerly (dynamo skips the forward)"
    OUTSIDE = "fails (mark_dynamic: outside its range)"  # the recompile it needs contradicts the mark


# torch.compiler.set_stance: what a request no cached graph accepts does under each (None: it compiles)
STANCES = {"default": None, "eager_on_recompile": Outcome.HELD, "fail_on_recompile": Outcome.REFUSED,
           "eager_then_compile": None}
# set from the first call, not only while the requests run: eager_then_compile runs a frame's first call eagerly and
# compiles its second with the dimensions that differed between the two already dynamic (no static graph first)
FROM_THE_START = {"eager_then_compile"}


@dataclass(frozen=True)
class Prediction:
    length: int
    outcome: Outcome
    graph: str  # the graph it reuses: a cached graph's compile id, or "new at request N"
    why: str  # for a compile: the guard the newest cached graph fails, in dynamo's words


def predict(lengths: Sequence[int], check: Callable[[int], list[tuple[str, str | None]]],
            limit: int, instead: Outcome | None = None,
            marked: Callable[[int], bool] = lambda length: True) -> list[Prediction]:
    """`check(length)`: each cached graph's compile id with the guard it fails for that length (None: accepts);
    `instead`: what a request no cached graph accepts does under a stance that compiles nothing new (HELD,
    REFUSED), None where it compiles; `marked(length)`: whether mark_dynamic's range (if any) holds the length: a
    length no graph accepts and the range does not hold fails, since the graph it would need contradicts the
    mark."""
    new: dict[int, int] = {}  # a predicted graph's length -> the request that compiles it
    checks: dict[int, list[tuple[str, str | None]]] = {}  # the cached graphs' guards read a length the same each time
    out = []
    for i, length in enumerate(lengths, 1):
        if length not in checks:
            checks[length] = check(length)
        checked = checks[length]
        accepting = next((gid for gid, failed in checked if failed is None), None)
        if accepting is not None:
            out.append(Prediction(length, Outcome.REUSES, accepting, ""))
        elif length in new:
            out.append(Prediction(length, Outcome.REUSES, f"new at request {new[length]}", ""))
        else:
            why = (checked[0][1] or "") if checked else "no graph cached"
            if not marked(length):
                out.append(Prediction(length, Outcome.OUTSIDE, "", why))
            elif instead is not None:
                out.append(Prediction(length, instead, "", why))
            elif len(checked) + len(new) >= limit:
                out.append(Prediction(length, Outcome.EAGER, "", why))
            else:
                new[length] = i
                out.append(Prediction(length, Outcome.COMPILES, f"new at request {i}", why))
    return out
