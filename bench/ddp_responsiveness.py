"""Is the server responsive while training processes start? `python -m bench.ddp_responsiveness`
-> bench/RESULTS-ddp-responsiveness.md.

Starts the app, sends `--calls` concurrent `/ddp` requests from stock gradio_client clients (default timeouts:
each a `Client(url)` of its own, as separate people would), and meanwhile reads `GET /gradio_api/info` and the
page every 0.25 s, recording how long each took. The runs queue (one multi-process run at a time, server-wide):
each starts its processes (two ranks importing torch, on every core) while the others wait."""

from __future__ import annotations

import statistics
import threading
import time
import urllib.request

from gradio_client import Client

from bench.appserver import start_app, stop_app
from bench.common import parser
from explorer.core import machine

PROBE_EVERY_S = 0.25


def _probe(url: str, stop: threading.Event, seconds: list[float], failures: list[str]) -> None:
    while not stop.is_set():
        start = time.monotonic()
        try:
            for path in ("gradio_api/info", ""):
                urllib.request.urlopen(url + path, timeout=30).read()
            seconds.append(time.monotonic() - start)
        except OSError as e:
            failures.append(f"{type(e).__name__}: {e}")
        stop.wait(PROBE_EVERY_S)


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-ddp-responsiveness.md")
    args.add_argument("--calls", type=int, default=10, help="concurrent /ddp requests (default: 10)")
    args = args.parse_args(argv)
    calls = 1 if args.quick else args.calls
    scenario = "stragglers" if args.quick else "uneven"  # quick: no deliberate hang to wait out
    proc, url, _ = start_app()
    probes: list[float] = []
    probe_failures: list[str] = []
    outcomes: list[str] = []
    stop = threading.Event()
    started = time.monotonic()
    try:
        prober = threading.Thread(target=_probe, args=(url, stop, probes, probe_failures), daemon=True)
        prober.start()

        def one(i: int) -> None:
            try:
                report = Client(url, verbose=False).predict(scenario, "rnn", '{"hidden": 16, "embed": 8}', 2, 2,
                                                            "eager", api_name="/ddp")
                outcomes.append("ok" if report["states"] else "no states")
            except Exception as e:  # what the person calling would see
                outcomes.append(f"{type(e).__name__}: {str(e)[:200]}")

        threads = [threading.Thread(target=one, args=(i,)) for i in range(calls)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        prober.join()
    finally:
        stop_app(proc)
    errors = [o for o in outcomes if o != "ok"]
    m = machine.describe()
    probes.sort()
    lines = ["# The server while training processes start", "",
             f"Measured by `python -m bench.ddp_responsiveness` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"torch {m['torch']}, {time.strftime('%Y-%m-%d')}, in {time.monotonic() - started:.0f} s: {calls} "
             f"concurrent `/ddp` calls (scenario {scenario}, 2 processes, 2 steps), each from a stock gradio_client "
             f"`Client` with its default timeouts, while `GET /gradio_api/info` and the page were read every "
             f"{PROBE_EVERY_S} s.", "",
             f"**{len(errors)} of {calls} calls failed**" + (f": {'; '.join(sorted(set(errors)))}" if errors else "")
             + f"; {len(probe_failures)} probe(s) failed.", "",
             "| probes | median s | p95 s | max s |", "|---:|---:|---:|---:|",
             f"| {len(probes)} | {statistics.median(probes):.3f} | {probes[int(0.95 * (len(probes) - 1))]:.3f} | "
             f"{probes[-1]:.3f} |" if probes else "| 0 | — | — | — |"]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
