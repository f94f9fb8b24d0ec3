"""Whether recording the lines that ran moves the timings the Playground shows: `python -m bench.lines_overhead`
-> bench/RESULTS-lines-overhead.md.

The lines are recorded in a pass of their own on the server's side while the timings are taken on the measuring
core (explorer/eager/lines.py). Each pair runs two new inputs of the same length on the RNN through the
Playground's run, one with the lines recorded *while its timings are taken* (a thread started as soon as the graph
is captured: the worst case, a person typing with the box open), one without; which goes first alternates. Read:
each run's eager forward and train-step medians, as the cards show them."""

from __future__ import annotations

import statistics
import threading

from bench.common import measured_by, parser
from explorer.core import machine
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.runs.session import Session
from explorer.serving.pool import MeasurePool
from explorer.views.playground import GraphFirst, update

PAIRS = 10
TOKENS = 100
ARMS = ("lines closed", "lines recorded meanwhile")


def _run(pool: MeasurePool, session: Session, text: str, lines: bool) -> tuple[float, float]:
    """(forward ms, train step ms) of one new input, its lines recorded meanwhile or not."""
    recording = None
    for item in update(session, "rnn", text, "", {}, pool, fresh=True):
        if isinstance(item, GraphFirst) and lines:
            recording = threading.Thread(target=session.lines)
            recording.start()
    if recording is not None:
        recording.join()
    run = session.last
    assert run is not None and run.input.text == text
    return run.forward.median_ms, run.train_step.median_ms


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-lines-overhead.md").parse_args(argv)
    pairs = 2 if args.quick else PAIRS
    machine.keep_off_measure_cores()  # as the app's server threads: the measuring core is the pool's
    session = Session()
    pool = MeasurePool()
    pool.start()
    _run(pool, session, text_of_length("warm " + DEFAULT_TEXT, TOKENS), False)  # the pool's first timing: not counted
    ms: dict[str, list[tuple[float, float]]] = {a: [] for a in ARMS}
    n = 0
    for i in range(pairs):
        for arm in ARMS if i % 2 == 0 else ARMS[::-1]:
            n += 1
            text = text_of_length(f"{n:03d} {DEFAULT_TEXT}", TOKENS)  # new each time: nothing from the cache
            ms[arm].append(_run(pool, session, text, arm != ARMS[0]))
    pool.stop()
    out = ["# Recording the lines that ran, and the timings shown", "",
           f"{measured_by('lines_overhead', args.quick)}: {pairs} pairs on the RNN at {TOKENS} tokens, each a new "
           "input through the Playground's run, in turns (which goes first alternates); in one arm the lines are "
           "recorded in a thread started as soon as the graph is captured, while the timings run.", "",
           "| figure | arm | median of the runs' medians, ms | min-max ms |", "|---|---|---:|---|"]
    verdicts = []
    for k, figure in enumerate(("eager forward", "train step")):
        values = {a: [m[k] for m in ms[a]] for a in ARMS}
        out += [f"| {figure} | {a} | {statistics.median(v):.3f} | {min(v):.3f}-{max(v):.3f} |"
                for a, v in values.items()]
        # The pairs share one run (one machine state): not independent, so no interval is drawn from them; what
        # the samples say without one is whether either arm's range lies wholly beside the other's.
        (lo_a, hi_a), (lo_b, hi_b) = ((min(v), max(v)) for v in values.values())
        apart = hi_a < lo_b or hi_b < lo_a
        ratio = statistics.median(b / a for a, b in zip(*values.values(), strict=True))
        verdicts.append(f"- {figure}: " + (f"the ranges do not overlap: recording moved it (median ratio of the pairs "
                                           f"{ratio:.2f}x)." if apart else
                                           f"the ranges overlap: no difference resolved (median ratio of the pairs, "
                                           f"recorded over closed, {ratio:.2f}x)."))
    args.out.write_text("\n".join([*out, "", *verdicts]) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
