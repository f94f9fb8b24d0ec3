"""What each deployment route costs and gives: `python -m bench.deploy` -> bench/RESULTS-deploy.md.

Every model of the zoo at its default config, plus the RNN with `loop=scan` and early exit with
`exit_with=cond`, frozen by every route in the deployment worker (as the lab does, on an empty inductor cache),
each artefact checked against eager at other lengths and another text, and timed against eager back to back."""

from __future__ import annotations

import os
import tempfile
import time

from bench.common import parser
from explorer.core import machine
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.fmt import format_bytes, ms_iqr
from explorer.core.limits import DEPLOY_TIMEOUT_S
from explorer.labs.deploy.checks import DEFAULT_LENGTHS
from explorer.labs.deploy.lab import run_deploy
from explorer.labs.deploy.results import DeployResult, RouteResult
from explorer.labs.deploy.routes import ROUTES
from explorer.workers.process import WorkerProcess
from models import make_config

CASES = [("rnn", {}), ("rnn", {"loop": "scan"}), ("transformer", {}), ("early_exit", {}),
         ("early_exit", {"exit_with": "cond"}), ("tree", {})]


def _row(case: str, r: RouteResult) -> str:
    diffs = [c.max_abs_diff for c in r.checks if c.max_abs_diff is not None]
    refused = sum(1 for c in r.checks if c.error)
    checked = (f"max {max(diffs):.1g}" if diffs else "—") + (f", {refused} refused" if refused else "")
    c = r.comparison
    speed = (f"{ms_iqr(r.latency.median_ms, r.latency.iqr_ms, 3)} vs {ms_iqr(r.eager.median_ms, r.eager.iqr_ms, 3)}: "
             f"**{c.ratio:.2f}x** ({c.interval()}{'' if c.resolved or not c.enough else ', not resolved'})"
             if r.latency and r.eager and c else "—")
    why = (r.first_problem() or "").replace("|", "\\|")[:140]
    return (f"| {case} | {r.route} | {r.outcome} | {r.seconds:.1f} | "
            f"{format_bytes(r.artefact_bytes) if r.artefact_bytes else '—'} | {checked} | {speed} | {why} |")


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-deploy.md").parse_args(argv)
    cases = [("transformer", {})] if args.quick else CASES
    routes = ["jit.trace", "export"] if args.quick else list(ROUTES)
    machine.keep_off_measure_cores()  # as the app: the worker inherits it, timings move to the measuring core
    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # cold: what a first deployment costs
        service = WorkerProcess(DEPLOY_TIMEOUT_S, name="deployment")
        try:
            for model, values in cases:
                case = " ".join([model, *(f"{k}={v}" for k, v in values.items())])
                *_, result = run_deploy(service, model, make_config(model, values), DEFAULT_TEXT,
                                        list(DEFAULT_LENGTHS), routes, out)
                assert isinstance(result, DeployResult)
                rows += [_row(case, r) for r in result.routes]
                print(case, "done", flush=True)
        finally:
            service.stop()
    m = machine.describe()
    lines = ["# Deployment routes", "",
             f"Measured by `python -m bench.deploy` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} thread(s) (ONNX Runtime: 1 intra-op thread), torch {m['torch']}, "
             f"{time.strftime('%Y-%m-%d')}, in {time.monotonic() - started:.0f} s. Each model frozen at the default "
             f"text ({len(DEFAULT_TEXT.encode())} tokens), checked against eager at {list(DEFAULT_LENGTHS)} tokens "
             "and at another text of the same length; latencies are medians (IQR) of torch.utils.benchmark blocks "
             "at the default text, the artefact and eager timed back to back in the deployment worker. Empty "
             "inductor cache (AOTInductor compiles cold).", "",
             "| model | route | outcome | build s | artefact | max \\|diff\\| vs eager | artefact vs eager | "
             "first problem |", "|---|---|---|---:|---:|---|---|---|", *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
