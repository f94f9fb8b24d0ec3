"""Each batching strategy on a 64-sentence Zipf batch (lengths 5-300) for two default models, eager and
compiled: `python -m bench.batching` -> bench/RESULTS-batching.md.

The same code as the app's Batching lab and `python -m explorer batch`: explorer.batching for the eager
figures, the app's compile worker for the compiled ones (a fresh dynamo state per strategy).
"""

from __future__ import annotations

import sys
import time

from bench.common import parser
from explorer.core import machine
from explorer.core.batches import generate_batch
from explorer.core.fmt import format_bytes, format_flops
from explorer.eager.memory import warm_profiler
from explorer.labs.batching.lab import compile_lab, eager_lab
from explorer.sources.registry import subject
from explorer.workers.process import WorkerProcess

MODELS = ("rnn", "transformer")
BACKENDS = ("inductor", "aot_eager")
TIMEOUT_S = 180  # per strategy and backend: inductor on a 300-step unrolled RNN takes minutes


def _ms(d: dict, key: str) -> str:
    return "—" if d.get(f"{key}_ms") is None else f"{d[f'{key}_ms']:.2f} ({d[f'{key}_iqr_ms']:.2f})"


def _table(report: dict, compiled: dict[str, dict]) -> list[str]:
    head = ["strategy", "fwd ms (IQR)", "train ms (IQR)", "tokens/s", "padding", "GFLOP (useful)", "peak fwd",
            "shapes", "max abs diff"] + [f"{b} fwd / train ms, vs its eager (95% interval), compiles, compile s"
                                         for b in compiled]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in report["strategies"]:
        if not s["supported"]:
            rows.append(f"| {s['title']} | not supported: {s['note']} |" + " |" * (len(head) - 2))
            continue
        cells = [s["title"], _ms(s, "forward"), _ms(s, "train_step"), f"{s['tokens_per_s']:,.0f}",
                 f"{s['padding_fraction']:.0%}",
                 format_flops(s["flops_total"], s["flops_useful"]),
                 format_bytes(s["peak_bytes"]), str(s["distinct_shapes"]),
                 f"{s['max_abs_diff']:.1e}" + ("" if s["agrees"] else " **disagrees**")
                 + (f"; {s['note']}" if s["note"] else "")]
        for backend_report in compiled.values():
            c = next(x for x in backend_report["strategies"] if x["name"] == s["name"])["compiled"]
            status = c["error"] or c["fallback"]
            train = "—" if c["train_step_ms"] is None else f"{c['train_step_ms']:.2f}"
            pair = c["comparison"]
            cell = (f"not compiled: {status}" if status else
                    f"{c['forward_ms']:.2f} / {train}, {pair['ratio']:.2f}x ({pair['low']:.2f}-{pair['high']:.2f}), "
                    f"{c['compiles']}, "
                    f"{c['compile_s'] + (c['train_compile_s'] or 0):.1f}" + (f"; {c['note']}" if c["note"] else ""))
            if c["graph_breaks"]:
                cell += "; graph break: " + "; ".join(c["graph_breaks"])
            cells.append(cell)
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "RESULTS-batching.md")
    p.add_argument("--n", type=int, default=64, help="sentences in the batch")
    args = p.parse_args(argv)
    n = 2 if args.quick else args.n
    models, backends = (["rnn"], ["eager"]) if args.quick else (MODELS, BACKENDS)
    warm_profiler()
    machine.pin_threads()
    longest = 20 if args.quick else 300  # the quick run only checks the script: short unrolls compile fast
    texts = generate_batch(n, "zipf", 5, longest, seed=0)
    m = machine.describe()
    lengths = sorted(len(t.encode()) for t in texts)
    lines = ["# Batching lab: padding, bucketing, packing, nested tensors and the plain loop", "",
             f"Measured by `python -m bench.batching` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} measurement thread(s), torch {m['torch']}, {time.strftime('%Y-%m-%d')}. "
             f"Batch: {n} generated sentences, Zipf-like lengths 5-{longest} (seed 0): median {lengths[n // 2]}, "
             f"max {lengths[-1]}, {sum(lengths)} tokens. Bucket width 32 tokens. Times are the whole batch, "
             "median (IQR): the eager forwards (without grad) of all strategies timed together round by round (one "
             "block of each per round, the order rotated, so the verdict's comparisons are paired); train step = "
             "forward + cross-entropy + backward, torch.utils.benchmark blocks. Compiled: each strategy compiled "
             f"fresh in the app's compile worker (dynamic=None, recompile limit 8, timeout {TIMEOUT_S} s per "
             "strategy), its forward timed against its own eager forward in interleaved pairs there (the ratio, "
             "eager / compiled, with its 95% bootstrap interval); compile s = forward + train step compiles.", ""]
    service = WorkerProcess(timeout_s=TIMEOUT_S)
    try:
        for name in models:
            start = time.perf_counter()
            *_, run = eager_lab(subject(name), texts, 32, 0.25 if args.quick else 1.0)  # quick: a quarter budget
            eager_s = time.perf_counter() - start
            report = run.report()
            compiled = {}
            for backend in backends:  # each pass overwrites the strategies' compiled figures: snapshot them
                for p in compile_lab(service, run, backend):
                    if int(p.elapsed_s) % 30 == 0:
                        print(f"{name} {backend}: {p.phase} {p.elapsed_s:.0f} s", file=sys.stderr)
                compiled[backend] = run.report()
            lines += [f"## {name} ({report['arch']}, default config)", "", *_table(report, compiled), "",
                      f"Verdict (eager): {report['verdict']}", "",
                      f"Verdict (with compiled, {backends[0]}): {compiled[backends[0]]['verdict']}", "",
                      f"Eager lab wall time: {eager_s:.1f} s.", ""]
            args.out.write_text("\n".join(lines) + "\n")
    finally:
        service.stop()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
