"""How the per-node times of a train step add up against the cards: `python -m bench.costs` -> bench/RESULTS-costs.md.

For each zoo model, each library architecture, both examples and a model this project did not write
(tests/outside/moe_top1.py, a mixture of experts), at 100 tokens: the Playground's run, then the cards' timings again
(the measurement process's job, as the Playground's run sends it: forward and train step without the profiler, on
the measuring core) before and after each round's costs pass (explorer/eager/costs.py: five pairs of steps,
the profiler collecting in one and off in the other, every operator and the Python before it charged to a graph
node, the profiler's cost taken off in proportion; three pairs of inference forwards the same way, matched to the
train step's nodes). Read, per round: the nodes' sums forward and backward, what the step spent outside every node,
the pass's plain step, the nodes' inference sum, and the cards; the nodes' sums over the card's train step and
forward are what the Playground says beside the figure ("the nodes' sum N% of it", "the nodes' inference sum N% of
it"). The rounds show how far the cards themselves move from one timing to the next on this machine."""

from __future__ import annotations

import statistics

from bench.appserver import ROOT
from bench.common import measured_by, parser
from explorer.core import machine
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.runs.session import Session
from explorer.serving.plan import FORWARD_BUDGET_S, TRAIN_BUDGET_S
from explorer.serving.pool import MeasurePool, Timed, TimingJob
from explorer.sources.library import ARCHITECTURES
from explorer.sources.registry import add_model_file
from explorer.views.playground import update
from models import ZOO

TOKENS = 100
ROUNDS = 5
CARDS = 3  # timings of the cards on each side of a pass: a card's 0.08 s can land on one of the machine's slow spells
FILES = ("examples/image_cnn.py", "examples/lstm_tagger.py", "tests/outside/moe_top1.py")
STEP, OWN, WITH_OTHER = ("nodes' sum / card's step", "nodes' forward / pass's forward",
                         "with no node's forward / pass's forward")
INFERENCE = "nodes' inference / card's forward"
TIMED = "pass's plain step / card's step"
COLUMNS = ("nodes' forward ms", "card's forward ms", "nodes' sum ms", "no node ms", "zero_grad ms (in the nodes)",
           "after the last operator ms", "pass's plain step ms", "card's train step ms", TIMED, STEP,
           "pass's plain forward ms", OWN, WITH_OTHER, "nodes' inference ms", "pass's plain inference ms", INFERENCE)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-costs.md").parse_args(argv)
    machine.keep_off_measure_cores()  # as the app's server threads: the measuring core is the pool's
    machine.pin_threads()  # and as the app's: its torch threads fit the cores it keeps
    files = [] if args.quick else [add_model_file(str(ROOT / f)) for f in FILES]  # before the pool's processes
    pool = MeasurePool()
    pool.start()
    models = ["transformer"] if args.quick else [*ZOO, *(a.name for a in ARCHITECTURES), *files]  # quick: the
    # zoo's cheapest pass (the RNN's, first in the zoo, is longer)
    rounds, cards = (1, 1) if args.quick else (ROUNDS, CARDS)
    train, fwd, own_fwd, with_other, timed, spread = [], [], [], [], [], []
    out = ["# The nodes' times against the cards", "",
           f"{measured_by('costs', args.quick)}: each of {len(models)} models (the zoo, the library's architectures, "
           f"the examples, a mixture of experts from tests/outside) at {TOKENS} tokens, {rounds} round(s) of its train "
           f"step profiled node by node between timings of its cards as the Playground's run times them, {cards} "
           f"before and {cards} after (a card's figure: the median of the {2 * cards}, so that a drift of the "
           "machine's speed falls on both sides of the pass and one timing caught in a slow spell does not decide "
           "it; five pairs of steps, the profiler on and off, the plain one up to five steps in a row; each node's "
           "mean, the profiler's cost taken off in proportion, the parameters' nodes holding their gradients' "
           "accumulation and zero_grad; three pairs of inference forwards, matched to the step's nodes). "
           "Each cell: the median over the rounds (min-max).", "",
           "| model | nodes | " + " | ".join(COLUMNS) + " |", "|---|---:|" + "---:|" * len(COLUMNS)]
    mean = statistics.mean
    try:
        for name in models:
            session = Session()
            text = text_of_length(DEFAULT_TEXT, TOKENS)
            list(update(session, name, text, "", {}, pool))
            if session.last is None:  # the model refused the input (a block size under TOKENS): said, not skipped
                raise SystemExit(f"{name} did not run at {TOKENS} tokens (it refused the input)")
            job = TimingJob.of(name, {}, session.last.input.ids, FORWARD_BUDGET_S, TRAIN_BUDGET_S)
            cols: dict[str, list[float]] = {c: [] for c in COLUMNS}
            before = [next(t for t in pool.run(job) if isinstance(t, Timed)) for _ in range(cards)]
            for _ in range(rounds):
                costs = session.costs()
                after = [next(t for t in pool.run(job) if isinstance(t, Timed)) for _ in range(cards)]
                # the cards on either side of the pass, their median: a drift of the machine's speed in between
                # falls on both sides (the table's card columns show how far they move between rounds)
                card_forward = statistics.median(t.forward.median_ms for t in before + after)
                card_step = statistics.median(t.train_step.median_ms for t in before + after)
                before = after
                f, b = costs.nodes_ms()
                inference, plain_forward = costs.nodes_inference_ms(), mean(costs.plain_forward_ms)
                for col, v in zip(cols.values(), (
                        f, card_forward, f + b, mean(costs.other_ops_ms), mean(costs.zero_grad_ms),
                        mean(costs.outside_ms), mean(costs.plain_ms), card_step, mean(costs.plain_ms) / card_step,
                        (f + b) / card_step, plain_forward,
                        f / plain_forward, (f + mean(costs.other_forward_ops_ms)) / plain_forward, inference,
                        mean(costs.plain_inference_ms), inference / card_forward), strict=True):
                    col.append(v)
            for kept, col in ((train, STEP), (own_fwd, OWN), (with_other, WITH_OTHER), (fwd, INFERENCE),
                              (timed, TIMED)):
                kept.append(statistics.median(cols[col]))
            spread.append(max(cols["card's train step ms"]) / min(cols["card's train step ms"]))
            out.append(f"| {name} | {len(costs.nodes):,} | " + " | ".join(
                f"{statistics.median(c):.2f} ({min(c):.2f}-{max(c):.2f})" for c in cols.values()) + " |")
    finally:
        pool.stop()
    out += ["", f"The nodes' sum over the card's train step (each model's median over its rounds) ranged "
            f"{min(train):.2f}-{max(train):.2f}: {sum(abs(r - 1) > 0.1 for r in train)} of {len(train)} models "
            "outside 10%. The card's train step itself moved by up to "
            f"{max(spread):.2f}x between the rounds of a model (the largest over its smallest); the pass's plain step "
            f"over the card's ranged {min(timed):.2f}-{max(timed):.2f} ({sum(abs(r - 1) > 0.1 for r in timed)} of "
            f"{len(timed)} outside 10%). What the nodes leave out of the step is in the table (operators of no node, "
            "after the last operator; zero_grad is in the parameters' nodes): with the nodes they add up to the "
            "pass's plain step. The nodes' forward over the forward and loss of the pass's "
            f"plain steps (timed within them) ranged {min(own_fwd):.2f}-{max(own_fwd):.2f} "
            f"({sum(abs(r - 1) > 0.1 for r in own_fwd)} of {len(own_fwd)} outside 10%); with the forward's operators "
            f"of no node, {min(with_other):.2f}-{max(with_other):.2f} ({sum(abs(r - 1) > 0.1 for r in with_other)} "
            f"of {len(with_other)} outside 10%). The nodes' inference sum (the inference forward's operators matched "
            f"to the train step's nodes) over the card's forward ranged {min(fwd):.2f}-{max(fwd):.2f} "
            f"({sum(abs(r - 1) > 0.1 for r in fwd)} of {len(fwd)} outside 10%)."]
    args.out.write_text("\n".join(out) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
