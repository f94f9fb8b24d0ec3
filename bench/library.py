"""Library architectures and the examples/ models: how their autograd graphs grow with the input, what capturing one
costs against torchviz's `make_dot`, what torch.compile makes of them, and how each deployment route ends.

`python -m bench.library [--runs 7]` (torchviz comes with requirements-dev.txt): for GPT-2, BERT, Llama and T5 at
their default 2 layers, and each file of examples/, at 32 to 512 tokens: the graph's nodes, and the time of the
app's capture (`capture_run`: forward, loss, graph walk, saved bytes) against a forward with the same loss plus
`make_dot` on it, timed paired and interleaved in this process (one thread). Then, at 32 tokens:
`torch._dynamo.explain` (graphs, breaks and why), and the deployment lab's seven routes with their outcomes.
Appends to bench/RESULTS-library.md."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

LENGTHS = (32, 64, 128, 256, 512)
EXAMPLES = ("image_cnn.py", "lstm_tagger.py")
ROOT = Path(__file__).resolve().parents[1]


def _text(tokens: int) -> str:
    return ("The cat sat on the mat, and the dog said nothing at all. " * 20)[:tokens]


def _paired(a: Callable[[], object], b: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """Milliseconds of `a` and `b`, alternating, after one warm-up of each."""
    a(), b()
    xs, ys = [], []
    for _ in range(runs):
        for fn, out in ((a, xs), (b, ys)):
            start = time.perf_counter()
            fn()
            out.append(1e3 * (time.perf_counter() - start))
    return xs, ys


def _ms(xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return f"{statistics.median(xs):.1f} ms (IQR {q[2] - q[0]:.1f})"


def growth(name: str, lengths: tuple[int, ...], runs: int) -> list[str]:
    from torchviz import make_dot

    from explorer.eager.capture import capture_run, train_loss
    from explorer.sources.registry import source

    s = source(name)
    model = s.build(s.config())
    params = dict(model.named_parameters())
    rows = []
    for tokens in lengths:
        (ids,) = s.example_inputs(_text(tokens))
        capture = capture_run(model, ids)

        def dot(ids: torch.Tensor = ids) -> object:
            return make_dot(train_loss(model(ids), model), params=params)

        ours, theirs = _paired(lambda ids=ids: capture_run(model, ids), dot, runs)
        dot_nodes = sum(1 for line in dot().body if "[label=" in line)
        ratio = statistics.median(t / o for o, t in zip(ours, theirs, strict=True))
        rows.append(f"| {name} | {tokens} | {len(capture.graph.nodes)} | {dot_nodes} | {_ms(ours)} | "
                    f"{_ms(theirs)} | {ratio:.2f}x |")
    return rows


def compiled_and_deployed(name: str, routes: tuple[str, ...]) -> list[str]:
    import torch._dynamo as dynamo

    from explorer.api import final, named_subject, run_lab, workers
    from explorer.labs.contract import LabContext
    from explorer.labs.registry import LABS
    from explorer.sources.registry import source

    s = source(name)
    model = s.build(s.config())
    dynamo.reset()
    explained = dynamo.explain(model)(*s.example_inputs(_text(32)))
    reasons = "; ".join(sorted({str(b.reason).split("\n")[0][:120] for b in explained.break_reasons})) or "none"
    lines = [f"- **{name}**: `torch._dynamo.explain` at 32 tokens: {explained.graph_count} graph(s), "
             f"{explained.graph_break_count} break(s); reasons it gave: {reasons}"]
    ws = workers()
    try:
        who = named_subject(name, {}, _text(32))
        report = final(run_lab(LABS["deploy"], who, {"routes": ",".join(routes), "lengths": "8,100"},
                               LabContext(ws, tempfile.mkdtemp))).report
    finally:
        ws.stop()
    for r in report["routes"]:
        failed_check = next((f"{c['label']}: {c['error']}" for c in r["checks"] if c.get("error")), "")
        why = (r["skipped"] or r["error"] or failed_check).split("\n")[0][:160]
        lines.append(f"  - {r['route']}: {r['outcome']}" + (f" ({why})" if why else ""))
    return lines


def main(argv: list[str] | None = None) -> None:
    from bench.common import parser
    from explorer.core import machine
    from explorer.core.machine import pin_threads
    from explorer.labs.deploy.routes import ROUTES
    from explorer.sources.library import ARCHITECTURES
    from explorer.sources.registry import add_model_file


    p = parser(__doc__, "RESULTS-library.md")
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args(argv)
    pin_threads()
    runs = 2 if args.quick else args.runs
    names = ["gpt2"] if args.quick else [a.name for a in ARCHITECTURES] + [add_model_file(str(ROOT / "examples" / e))
                                                                            for e in EXAMPLES]
    lengths = (32,) if args.quick else LENGTHS
    routes = ("jit.trace",) if args.quick else tuple(ROUTES)
    m = machine.describe()
    lines = [f"## Capture, compile and deployment of library and user models ({time.strftime('%Y-%m-%d %H:%M')})",
             "", f"Measured by `python -m bench.library --runs {runs}` on {m['device']} ({m['cpu']}, {m['cores']} "
             f"cores), {m['threads']} thread(s), torch {m['torch']}; each model at its defaults. Capture: the app's "
             "`capture_run`; make_dot: the same forward and loss, then torchviz's `make_dot` (its graphviz source, "
             f"not rendered); medians of {runs} paired, interleaved runs; the ratio is the median of make_dot / "
             "capture per pair.", "",
             "| model | tokens | graph nodes | make_dot nodes | capture | forward + make_dot | ratio |",
             "|---|---|---|---|---|---|---|"]
    for name in names:
        lines += growth(name, lengths, runs)
    lines += ["", "Under torch.compile and each deployment route (the deployment lab, lengths 8 and 100 checked):", ""]
    for name in names:
        lines += compiled_and_deployed(name, routes)
    lines.append("")
    header = "# Library architectures and your own models\n\n" if not args.out.exists() else ""
    with args.out.open("a") as f:
        f.write(header + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
