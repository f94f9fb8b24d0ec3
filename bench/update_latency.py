"""Time of one eager Playground update, per model and input length: `python -m bench.update_latency`.

An update has two stages, as the UI shows them: (1) capture the graph, time forward and train step,
and draw the figures; (2) the profiler's exact memory peaks. Graph capture alone is timed too.
Writes bench/RESULTS-update.md (linked from the README). Medians and min/max over REPEATS.
"""

from __future__ import annotations

import statistics
import time

from bench.common import parser
from explorer.core import machine
from explorer.eager.capture import train_loss
from explorer.eager.graph import capture_graph
from explorer.eager.memory import warm_profiler
from explorer.eager.trace import ModuleTrace
from explorer.session import Session
from explorer.views.figures import graph_figure, history_figure
from models import ZOO
from models.tokenizer import to_ids

LENGTHS = (10, 100, 500)
REPEATS = 5
TEXT = "The quick brown fox jumps over the lazy dog, again and again. "


def _text(n: int) -> str:
    return (TEXT * (n // len(TEXT) + 1))[:n]


def _stats(xs: list[float]) -> str:
    ms = [x * 1e3 for x in xs]
    return f"{statistics.median(ms):.0f} ({min(ms):.0f}-{max(ms):.0f})"


def _capture_ms_per_2000(model, ids) -> tuple[int, float]:
    params = {id(p): n for n, p in model.named_parameters()}
    with ModuleTrace(model) as trace:
        loss = train_loss(model(ids))
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        graph = capture_graph(loss.grad_fn, trace, params)
        times.append(time.perf_counter() - start)
    return len(graph.nodes), statistics.median(times) * 1e3


def main() -> None:
    args = parser(__doc__, "RESULTS-update.md").parse_args()
    machine.pin_threads()
    warm_profiler()
    rows = []
    for name in ["rnn"] if args.quick else ZOO:
        for n in (10,) if args.quick else LENGTHS:
            session = Session(model_name=name)
            stage1, stage2 = [], []
            for _ in range(REPEATS):
                start = time.perf_counter()
                r = session.run(_text(n))
                graph_figure(r)
                history_figure(session.history)
                mid = time.perf_counter()
                session.measure_memory(r)
                stage2.append(time.perf_counter() - mid)
                stage1.append(mid - start)
            nodes, cap_ms = _capture_ms_per_2000(session.model, to_ids(_text(n)))
            rows.append((name, n, nodes, _stats(stage1), _stats(stage2), f"{cap_ms:.1f}",
                         f"{cap_ms / nodes * 2000:.1f}"))
            print(rows[-1], flush=True)
    m = machine.describe()
    lines = [
        "# One Playground update: time per model and input length",
        "",
        f"Measured by `python -m bench.update_latency` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
        f"{m['threads']} measurement thread(s), torch {m['torch']}, {time.strftime('%Y-%m-%d')}.",
        f"Each cell: median (min-max) over {REPEATS} updates, in ms.",
        "",
        "- **stage 1**: graph capture + module trace + diff, eager forward and train-step timing "
        "(torch.utils.benchmark, ~0.08 s + ~0.10 s budgets), layout and both figures: what appears first.",
        "- **stage 2**: the profiler's memory peaks (forward, and forward + backward), filled in right after.",
        "- **capture**: reading the autograd graph alone (median ms), and that scaled to 2,000 nodes.",
        "",
        "| model | tokens | graph nodes | stage 1 ms | stage 2 ms | capture ms | capture ms / 2,000 nodes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
