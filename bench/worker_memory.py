"""The deployment worker's memory over many deployments: `python -m bench.worker_memory`
-> bench/RESULTS-worker-memory.md.

Repeats single-route deployments (the RNN traced by `jit.trace`, a different text each time, as visitors would)
through the deployment worker with the app's limits (`GE_WORKER_JOBS`, `GE_WORKER_RSS_MB`), reading the worker's
resident memory (VmRSS) after every job. Without recycling it only grows; with it, it is bounded by what one
worker's `GE_WORKER_JOBS` jobs leave behind, below the ceiling."""

from __future__ import annotations

import statistics
import tempfile
import time

from bench.common import parser
from explorer.core import machine
from explorer.core.limits import DEPLOY_TIMEOUT_S, WORKER_JOBS, WORKER_RSS_MB
from explorer.labs.deploy.lab import run_deploy
from explorer.labs.deploy.results import DeployResult
from explorer.workers.process import WorkerProcess, resident_mb
from models import make_config

WINDOW = 20  # jobs per row of the table


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-worker-memory.md").parse_args(argv)
    jobs = 6 if args.quick else 200
    max_jobs = 3 if args.quick else int(WORKER_JOBS)
    machine.keep_off_measure_cores()  # as the app
    service = WorkerProcess(DEPLOY_TIMEOUT_S, name="deployment", max_jobs=max_jobs, max_rss_mb=WORKER_RSS_MB)
    samples: list[tuple[int, int, float]] = []  # (job, worker pid, MB resident after it)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as out:
        try:
            for job in range(jobs):
                text = f"Deployment number {job} of the benchmark."
                pid = None
                for item in run_deploy(service, "rnn", make_config("rnn"), text, [5], ["jit.trace"], out):
                    pid = service.pid or pid  # read while the worker lives (it may be recycled after the job)
                    if isinstance(item, DeployResult):
                        assert item.routes[0].error == "", item.routes[0].error
                rss = resident_mb(service.pid) if service.pid else None
                samples.append((job + 1, pid or 0, rss if rss is not None else float("nan")))
        finally:
            service.stop()
    rows = []
    for first in range(0, jobs, WINDOW):
        window = [s for s in samples[first:first + WINDOW] if s[2] == s[2]]  # recycled jobs have no reading
        mbs = [mb for *_, mb in window]
        rows.append(f"| {first + 1}-{min(first + WINDOW, jobs)} | {len({pid for _, pid, _ in window})} | "
                    f"{min(mbs):,.0f} | {statistics.median(mbs):,.0f} | {max(mbs):,.0f} |" if mbs else
                    f"| {first + 1}-{min(first + WINDOW, jobs)} | — | — | — | — |")
    read = [mb for *_, mb in samples if mb == mb]
    m = machine.describe()
    lines = ["# The deployment worker's memory over many deployments", "",
             f"Measured by `python -m bench.worker_memory` on {m['device']} ({m['cpu']}, {m['cores']} cores), torch "
             f"{m['torch']}, {time.strftime('%Y-%m-%d')}, in {time.monotonic() - started:.0f} s: {jobs} deployments "
             f"of the RNN by `jit.trace` (one route each, a different text each time), the worker's VmRSS read "
             f"after each job. Limits: replaced after {max_jobs} jobs or past {WORKER_RSS_MB:,.0f} MB.", "",
             f"**Resident memory stayed within {min(read):,.0f}-{max(read):,.0f} MB over {jobs} deployments; the "
             f"worker was replaced {len(service.recycled)} time(s)** "
             f"({'; '.join(sorted(set(service.recycled))) or 'never'}).", "",
             "| jobs | workers | min MB | median MB | max MB |", "|---|---:|---:|---:|---:|", *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
