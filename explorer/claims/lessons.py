"""A 45-minute class over the claims: one step per card, each with what to do, what to notice and a question
for the room. The figures come from the cards (measured on this server); the text names none."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from explorer.claims import rebuild, recompile, shape
from explorer.claims.board import CLAIMS, ClaimBoard
from explorer.claims.evidence import duration
from explorer.claims.predict import Answer, Prediction, count_where
from explorer.core.errors import InputError
from explorer.core.progress import Progress


@dataclass(frozen=True)
class Step:
    claim: str  # the card this step runs and shows
    minutes: int  # of the class's 45
    do: str
    notice: str
    question: str
    reads: tuple[str, ...]  # the card's words for what `do` and `notice` ask the room to read: shown, presented too
    predict: Prediction  # asked of the room before the evidence (a room's students answer it)


def _growth(x: dict[str, float]) -> Answer | None:
    if "rnn_nodes_long" not in x or not x.get("rnn_nodes_short"):
        return None
    return round(x["rnn_nodes_long"] / x["rnn_nodes_short"], 1)


EAGER_FIRST, RECOMPILE = "eager's first call", "the compiled model's recompile"


def _dearer(x: dict[str, float]) -> Answer | None:
    if "recompile_s" not in x or "eager_new_graph_ms" not in x:
        return None
    return RECOMPILE if 1e3 * x["recompile_s"] > x["eager_new_graph_ms"] else EAGER_FIRST


LONGER = ("eager's", "compiled's", "the same")


def _longer(x: dict[str, float]) -> Answer | None:
    if "eager.lines" not in x or "compiled.lines" not in x:
        return None
    e, c = x["eager.lines"], x["compiled.lines"]
    return LONGER[2] if e == c else LONGER[0] if e > c else LONGER[1]


FEW, MANY = "few tokens a call (small batches, short inputs)", "many tokens a call (large batches, long inputs)"


def _helps_most(x: dict[str, float]) -> Answer | None:
    """Where the largest compiled speed-up of the grid is: at or below the grid's median tokens a call, or above."""
    points = {k.removesuffix(".speedup"): v for k, v in x.items() if k.endswith(".speedup")}
    if not points:
        return None
    tokens = {k: math.prod(map(int, k.rsplit(".", 1)[1].split("x"))) for k in points}
    best = max(points, key=points.__getitem__)
    return FEW if tokens[best] <= statistics.median(tokens.values()) else MANY


RAISES, COMPLETES = "it raises an error", "every step completes"


def _plain_ddp(x: dict[str, float]) -> Answer | None:
    return None if "plain.raised" not in x else RAISES if x["plain.raised"] else COMPLETES


def _compiles(x: dict[str, float]) -> Answer | None:
    found = [v for k, v in x.items() if k.endswith(".compiles")]
    return float(sum(found)) if found else None


STEPS: tuple[Step, ...] = (
    Step("shape", 4, "Run the experiment, then open the Playground link and type a longer sentence.",
         "Look at how the RNN's node count follows the length, how many blocks early exit runs for two texts of the "
         "same length, and what one comma does to the tree's depth. Nothing is rebuilt between the two inputs.",
         "If the graph is rebuilt on every call, what must that cost, and where would you measure it?",
         ("nodes", "blocks", "depth"),
         Prediction(f"The RNN's graph at {shape.SHORT} tokens has some number of nodes. At {shape.LONG} tokens, how "
                    "many times as many?", _growth, unit="x", high=1e4)),
    Step("padding", 5, "Run the experiment; read the bars model by model.",
         "Whether the fastest strategy pads depends on the model; the per-sample loop needs no padding either, so "
         "see where it lands; a model with a bar for the loop only cannot be batched correctly at all.",
         "Why can't the early-exit model or the tree be padded into one batch?",
         ("per-sample loop", "ms"),
         Prediction("Of the models a padded batch can run, for how many will a padding-free strategy be faster "
                    "(by its whole interval)?", count_where("padded_over_free_low", lambda v: v > 1), unit="models",
                    high=50)),
    Step("rebuild", 5, "Run the experiment; compare the first bar with the second.",
         "Eager mode records the new architecture's graph on its first call; the compiled model recompiles (the "
         "card says whether a compile cache on this server served it).",
         "When is a recompile worth paying for?",
         ("eager: new graph", "compiled: recompile", "cache"),
         Prediction(f"The architecture changes from {rebuild.BEFORE['layers']} to {rebuild.AFTER['layers']} layers: "
                    "which costs more?", _dearer, (EAGER_FIRST, RECOMPILE))),
    Step("debugging", 5, "Run the experiment, then open the Debugging lab and read both tracebacks.",
         "Which line each traceback ends on, how many lines you must read to get there, and how long the error "
         "took to arrive: the compiled one comes after tracing, wrapped in the compiler's frames.",
         "Which traceback would you rather read at 2 a.m.?",
         ("lines", "names models/bugs.py", "to the error"),
         Prediction("The same bug in eager and compiled mode: which traceback has more lines?", _longer, LONGER)),
    Step("speed", 5, "Run the experiment; read the speed-ups and the break-even calls.",
         "Which models run faster compiled, by how much, and how many calls it takes to earn back the compile "
         "seconds.",
         "For a model served a million times a day, and for one you edit every minute, which mode wins?",
         ("x [", "paid back"),
         Prediction("How many of the models will run their forward faster compiled (by the whole interval)?",
                    count_where("speedup_low", lambda v: v > 1), unit="models", high=50)),
    Step("overhead", 6, "Run the experiment (it compiles a graph for every point: slow the first time).",
         "Follow the dotted overhead-share line: where it is high (small batches, long chains of small ops), how "
         "far above 1 is the compiled speed-up (eager's time over compiled's)? And where it is low?",
         "Where on the grid did compiling help most, and where did it not resolve or lose: is that where the "
         "overhead line is high? Why would it be?",
         ("overhead share", "speed-up"),
         Prediction("Where on the grid will compiling help most?", _helps_most, (FEW, MANY))),
    Step("deploying", 5, "Run the experiment; look for bars missing and for 'silently wrong'.",
         "Which models export as written, and which routes run without an error yet answer wrong on another input "
         "(a trace freezes the decisions of the one input it saw).",
         "What would you test before shipping a traced model?",
         ("silently wrong",),
         Prediction("How many (model, route) pairs will run without an error yet answer wrong on another input?",
                    count_where("outcome", lambda v: v == -1), unit="pairs", high=100)),
    Step("distributed", 5, "Run the experiment (it starts training processes: half a minute).",
         "What plain DDP does when two ranks exit at different depths (and what its first step's gradients were), "
         "what find_unused_parameters changes, and what it costs when nothing is unused.",
         "What else could make two ranks build different graphs?",
         ("plain DDP", "first step's gradients", "find_unused_parameters", "its cost"),
         Prediction("Two ranks exit at different depths: what does plain DDP do?", _plain_ddp, (RAISES, COMPLETES))),
    Step("recompile", 5, f"Before anything runs, have the room write down which of the lengths "
         f"{', '.join(map(str, recompile.LENGTHS))} will make each model, compiled at "
         f"{' then '.join(map(str, recompile.COMPILED_AT))} tokens, compile a new graph. Then run the experiment.",
         "How many lengths each model recompiled for, which ones, and whether the prediction its guards made "
         "before any ran held; the Shapes lab's symbols table says why (a length that became a symbol, or one a "
         "line of the model specialized).",
         "Which of your predictions missed, and which rule of dynamo's did the miss teach you?",
         ("recompiled", "as predicted"),
         Prediction(f"Over the models, how many of the runs at lengths {', '.join(map(str, recompile.LENGTHS))} will "
                    "compile a new graph, in all?", _compiles, unit="compiles", high=1000)),
)


def step(number: int) -> Step:
    """Step `number`, counted from 1 as the class sees it."""
    if not 1 <= number <= len(STEPS):
        raise InputError(f"the lesson has steps 1 to {len(STEPS)}; got {number}")
    return STEPS[number - 1]


def step_markdown(number: int, took_s: float | None = None) -> str:
    """The step's text; with `took_s`, how long its experiment last ran on this server, said against the step's
    minutes before anyone presses the button."""
    s = step(number)
    c = CLAIMS[s.claim]
    # what to notice, the question and the timing are the teacher's: projected, the step shows its claim and its Do
    return (f"### Step {number} of {len(STEPS)} (about {s.minutes} min)\n\n**“{c.statement}”**\n\n"
            f"**Do:** {s.do}\n\n<div class=\"ge-teachers\">\n\n**Notice:** {s.notice}\n\n**Ask the room:** "
            f"{s.question}\n\n{_fits(s, took_s)}\n\n</div>")


def _fits(s: Step, took_s: float | None) -> str:
    if took_s is None:
        return "*Its experiment has not run on this server yet: how long it takes here is not known.*"
    said = f"*Its experiment last took {duration(took_s)} on this server"
    if took_s > 60 * s.minutes:
        return (f"{said}, longer than this step's {s.minutes} minutes: show the result measured earlier, or start "
                "it before the step.*")
    return f"{said}, within this step's {s.minutes} minutes.*"


def _where(number: int, doing: Progress | None) -> str:
    """A step being measured, with where its experiment is and for how long it has run."""
    return str(number) if doing is None else f"{number} ({doing.phase}, {doing.elapsed_s:.0f} s in)"


def readiness(board: ClaimBoard) -> str:
    """The class's state on this server, for the Lessons tab: how many steps have a result to show, until when
    (the oldest of them expires first), which is being measured now and which are not measured (markdown)."""
    fresh = {n: r for n, st in enumerate(STEPS, 1) if (r := board.cached(st.claim)) is not None}
    running = [n for n, st in enumerate(STEPS, 1) if board.measuring(st.claim)]
    missing = [n for n in range(1, len(STEPS) + 1) if n not in fresh and n not in running]
    said = f"**{len(fresh)} of {len(STEPS)} steps measured on this server"
    if fresh:
        until = min(r.measured_at for r in fresh.values()) + board.ttl_s
        said += f", ready until {time.strftime('%H:%M UTC', time.gmtime(until))}** (when the oldest result expires)"
    else:
        said += "**"
    if running:
        said += (f". Being measured now: step{'s' if len(running) > 1 else ''} "
                 f"{', '.join(_where(n, board.doing(STEPS[n - 1].claim)) for n in running)}")
    if missing:
        said += (f". Not measured: step{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} (each "
                 "runs when its step's button is pressed, or in the server's start-up warm-up)")
    return said + "."
