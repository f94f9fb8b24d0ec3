"""Soak: 1,000 interactions across 20 architectures against the real app; does its memory stay flat?

`python -m bench.soak [--interactions 1000] [--sessions 10]` starts the app on a free local port and drives it from
`--sessions` gradio_client sessions in turn (with 10, a new one replaces an old one every 50 interactions, as
tabs come and go; with more, each interaction goes to the next of them, so all of them hold a history), reading
the RSS of the server and of its measurement processes from /proc after a warm-up of 100 interactions and at the
end. Appends to bench/RESULTS-load.md.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from bench.appserver import connect, start_app, stop_app
from bench.common import parser
from bench.load import ARCHS, WORDS, config_json

# 20 architectures: the load test's 14 and 6 more.
ARCHITECTURES = [*ARCHS, ("rnn", {"layers": 2, "bidirectional": True}), ("transformer", {"attention": "sdpa"}),
                 ("transformer", {"norm": "post", "activation": "relu"}), ("early_exit", {"blocks": 3}),
                 ("tree", {"bracketing": "balanced"}), ("tree", {"cell": "rnn"})]
assert len(ARCHITECTURES) == 20


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def family_rss_mib(pid: int) -> float:
    """The server's RSS and its child processes' (the measurement and compile workers)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return rss_mib(pid) + sum(rss_mib(c) for c in children)


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "RESULTS-load.md")
    p.add_argument("--interactions", type=int, default=1000)
    p.add_argument("--sessions", type=int, default=10)
    args = p.parse_args(argv)
    if args.quick:
        args.interactions = 6
    rng = random.Random(0)
    proc, url, _ = start_app()
    samples = []
    try:
        clients = [connect(url) for _ in range(min(args.sessions, args.interactions))]
        start = time.monotonic()
        for i in range(args.interactions):
            if args.sessions <= 10 and i % 50 == 49:  # a tab closes and a new one opens
                clients[rng.randrange(len(clients))] = connect(url)
            client = rng.choice(clients) if args.sessions <= 10 else clients[i % len(clients)]
            model, values = ARCHITECTURES[i % len(ARCHITECTURES)]
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40)))
            client.predict(model, text, "", config_json(values), api_name="/edit")
            if i == 99 or i == args.interactions - 1 or i % 100 == 99:
                samples.append((i + 1, family_rss_mib(proc.pid)))
        elapsed = time.monotonic() - start
    finally:
        stop_app(proc)
    warm, end = samples[0][1], samples[-1][1]
    # With ten sessions the history each holds is small: growth is a leak. With hundreds, each holds its latest
    # run (graph, figures) until its tab closes or its state expires (explorer.server.SESSION_TTL_S): growth per
    # session.
    goal = ("goal < 150 MiB" if args.sessions <= 10 else
            f"{(end - warm) / args.sessions:.2f} MiB per session, each holding its latest run until it closes or its "
            "state expires (explorer.server.SESSION_TTL_S); the steps between samples should shrink")
    lines = [f"## Soak: {args.interactions} interactions across 20 architectures from {args.sessions} sessions "
             f"({time.strftime('%Y-%m-%d %H:%M')})", "",
             f"`python -m bench.soak --interactions {args.interactions} --sessions {args.sessions}`", "",
             f"- RSS of the server and its measurement and compile processes after {samples[0][0]} interactions "
             f"(warm-up): {warm:.0f} MiB; at the end: {end:.0f} MiB; "
             f"growth {end - warm:+.0f} MiB ({goal}); {elapsed:.0f} s in all",
             "- RSS every 100 interactions (MiB): " + ", ".join(f"{n}: {m:.0f}" for n, m in samples), ""]
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
