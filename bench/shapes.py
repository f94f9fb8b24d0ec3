"""The shapes lab's prediction: its own seconds for a stream of requests on a cached model, and whether every request
then did what was predicted: `python -m bench.shapes` -> bench/RESULTS-shapes.md.

Every model source at its default config: the zoo, the four `transformers` architectures, both example files, and a
file of top-1 expert routing this project did not write for it (`nonzero` captured: capture_dynamic_output_shape_ops);
each compiled (eager backend) at 8 and 16 tokens, then 200 requests of a Zipf stream (1 to 120 tokens) predicted
from the cached graphs' guards and run, in this process; three runs each, a fresh dynamo state per run. The goal: the
prediction of 200 requests in under 1 s."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from bench.common import measured_by, parser
from explorer.compile.options import CompileOptions
from explorer.core import machine
from explorer.core.batches import generate_lengths
from explorer.labs.shapes.job import OUTPUT_SHAPES, ShapesJob
from explorer.sources.library import ARCHITECTURES
from explorer.sources.registry import add_model_file
from explorer.workers.protocol import WorkerContext
from models import ZOO

N = 200
GOAL_S = 1.0
ROOT = Path(__file__).resolve().parent.parent
FILES = ("examples/lstm_tagger.py", "examples/image_cnn.py")
ROUTING = "tests/outside/moe_top1.py"  # its forward is skipped unless nonzero is captured


def _models() -> list[tuple[str, tuple[str, ...]]]:
    """Each model source's models by name, with the dynamo switches each runs under."""
    files = [(add_model_file(str(ROOT / f)), ()) for f in FILES]
    return [*((m, ()) for m in ZOO), *((a.name, ()) for a in ARCHITECTURES), *files,
            (add_model_file(str(ROOT / ROUTING)), (OUTPUT_SHAPES,))]


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-shapes.md", runs=3).parse_args(argv)
    models, n, runs = ([("transformer", ())], 20, 1) if args.quick else (_models(), N, args.runs)
    machine.pin_threads()  # as the app, the CLI and the workers
    requests = tuple(generate_lengths(n, "zipf", 1, 120, 0))
    rows = []
    began = time.monotonic()
    for model, switches in models:
        seconds, agreed, graphs = [], [], []
        for _ in range(runs):
            r = ShapesJob(model, {}, CompileOptions("eager"), (8, 16), requests, switches).run(WorkerContext(print))
            seconds.append(r.predict_s)
            agreed.append(r.agreed)
            graphs.append(len(r.graphs))
        med = statistics.median(seconds)
        said = f"{model} ({', '.join(f'{w}=True' for w in switches)})" if switches else model
        rows.append(f"| {said} | {graphs[0]} | {med * 1000:.1f} ({min(seconds) * 1000:.1f}-{max(seconds) * 1000:.1f}) "
                    f"| {' / '.join(map(str, agreed))} of {n} | {'yes' if max(seconds) < GOAL_S else 'no'} |")
    lines = ["# The shapes lab's prediction", "",
             f"{measured_by('shapes', args.quick)}, in {time.monotonic() - began:.0f} s: each model (the zoo, the "
             f"`transformers` architectures, the example files, {ROUTING}) compiled (eager backend) at 8 and 16 "
             f"tokens, then {n} requests of a Zipf stream (1 to 120 tokens), "
             f"{runs} run(s) each with a fresh dynamo state. The prediction's seconds are its own (every request "
             "checked against the cached graphs' guards, before any ran); the agreement is with what dynamo then did.",
             "", "| model | graphs of the forward cached | prediction, ms: median (min-max) | requests as predicted, "
             f"per run | under {GOAL_S:g} s |", "|---|---:|---|---|---|", *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
