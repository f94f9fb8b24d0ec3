"""The run as code against the app: `python -m bench.reproduce`.

For each zoo model and GPT-2 at their default configs, on the app's default text: the app's own run (a Session, as
the Playground makes it: the graph captured, the forward and the train step timed on its measuring core), then the
script the downloads panel gives for it, run in a fresh isolated interpreter in an empty directory (only torch,
and transformers for GPT-2). Per model: both node counts, and each timing's two medians with their IQRs, the
script's over the app's, and whether the two medians' bands (median ± IQR) overlap. Writes
bench/RESULTS-reproduce.md. Run it on an idle machine: the two timings are taken one after the other."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import parser
from explorer.artefacts.script import reproduction_script
from explorer.core import machine
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.machine import pin_threads
from explorer.runs.session import Session
from models import ZOO

MODELS = (*ZOO, "gpt2")
COLUMNS = ("model", "nodes: app / script", "timing", "app: median (IQR) ms", "script: median (IQR) ms",
           "script / app", "bands overlap")


def _overlap(a: dict, b: dict) -> bool:
    return abs(a["median_ms"] - b["median_ms"]) <= a["iqr_ms"] + b["iqr_ms"]


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-reproduce.md").parse_args(argv)
    models = ("transformer",) if args.quick else MODELS  # quick: the cheaper run (the tree's script takes longer)
    pin_threads()
    m = machine.describe()
    began = time.monotonic()
    rows = []
    for name in models:
        session = Session()
        session.configure(name, {})
        session.run(DEFAULT_TEXT)
        with tempfile.TemporaryDirectory(prefix="graph-explorer-reproduce-") as tmp:
            script = Path(tmp) / "run.py"
            script.write_text(reproduction_script(session))
            done = subprocess.run([sys.executable, "-I", str(script)], cwd=tmp, capture_output=True, text=True,
                                  timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"{name}: the script failed: {done.stderr[-2000:]}")
        mine = json.loads(done.stdout.strip().splitlines()[-1])
        app = {"forward": session.last.forward, "train_step": session.last.train_step}
        nodes = f"{len(session.last.capture.graph.nodes)} / {mine['nodes']}"
        for timing in ("forward", "train_step"):
            a = {"median_ms": app[timing].median_ms, "iqr_ms": app[timing].iqr_ms}
            b = mine[timing]
            rows.append([name, nodes, timing.replace("_", " "), f"{a['median_ms']:.3f} ({a['iqr_ms']:.3f})",
                         f"{b['median_ms']:.3f} ({b['iqr_ms']:.3f})", f"{b['median_ms'] / a['median_ms']:.2f}x",
                         "yes" if _overlap(a, b) else "no"])
        print(name, "done", flush=True)
    lines = ["# The run as code against the app", "",
             f"Measured by `python -m bench.reproduce{' --quick' if args.quick else ''}` on {m['device']} "
             f"({m['cpu']}, {m['cores']} cores), torch {m['torch']}, {time.strftime('%Y-%m-%d')}, in "
             f"{time.monotonic() - began:.0f} s: each model at its default config on the app's default text "
             f"({len(DEFAULT_TEXT)} characters). The app's figures: a Session's run, timed on its measuring core with "
             "its budget; the script's: the downloaded script in a fresh isolated interpreter (torch.utils.benchmark, "
             "0.5 s per timing), one thread each.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS),
             *("| " + " | ".join(map(str, r)) + " |" for r in rows)]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
