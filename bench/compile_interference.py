"""Does a compile bend an eager timing? `python -m bench.compile_interference` -> bench/RESULTS-interference.md.

This VM's speed drifts by up to 2x over seconds to minutes, so "alone" and "while compiling" must be sampled
at the same moment. While the compile worker compiles (inductor, an empty cache, a new static length each
round), the script takes pairs of reference timings (the Playground's, same budget): one with the worker
running, one with the worker and its compiler frozen (SIGSTOP, then SIGCONT), in alternating order. The ratio
of each pair is the compile's effect with the drift cancelled. First with the app's core separation (the worker
off the measuring core), then with the worker allowed on every core, as without it."""

from __future__ import annotations

import os
import signal
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import parser
from explorer.compile.options import CompileOptions
from explorer.compile.track import CompileTrack
from explorer.core import machine
from explorer.core.batches import sentence
from explorer.core.limits import FORWARD_BUDGET_S
from explorer.eager import timing
from explorer.eager.capture import forward
from explorer.eager.timing import measure
from explorer.workers.process import WorkerProcess
from models import build_model, make_config
from models.config import config_dict
from models.tokenizer import encode, to_ids

REFERENCE = ("rnn", "The reference sentence, timed alone and while a compile runs.")


def _family(pid: int) -> list[int]:
    """`pid` and every process below it (the worker's C++ compiler), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    family, todo = [], [pid]
    while todo:
        p = todo.pop()
        family.append(p)
        todo += children.get(p, [])
    return family


@contextmanager
def _frozen(pid: int) -> Iterator[None]:
    """The worker and its subprocesses stopped for the block: the timing inside runs alone. A measuring core is
    held first (a worker frozen while it holds the core for its own timing would never give it back) and
    `measure` inside times on it without asking again."""
    with timing.CORES.hold() as core:
        timing.use_cores(timing.HeldCore(core))
        try:
            with _stopped(_family(pid)):
                yield
        finally:
            timing.use_cores(timing.CORES)


@contextmanager
def _stopped(family: list[int]) -> Iterator[None]:
    for p in family:
        with suppress(ProcessLookupError):  # it may have just exited
            os.kill(p, signal.SIGSTOP)
    try:
        yield
    finally:
        for p in family:
            with suppress(ProcessLookupError):  # it may have just exited
                os.kill(p, signal.SIGCONT)


@dataclass
class Pairs:
    during: list[float] = field(default_factory=list)
    alone: list[float] = field(default_factory=list)

    def ratios(self) -> list[float]:
        return [d / a for d, a in zip(self.during, self.alone, strict=True)]


def _pairs(service: WorkerProcess, lengths: list[int], every_core: bool, backend: str, most: int) -> Pairs:
    model = build_model(REFERENCE[0], make_config(REFERENCE[0]))
    ids = to_ids(REFERENCE[1])

    def sample() -> float:
        return measure("reference", lambda: forward(model, ids), FORWARD_BUDGET_S).median_ms

    pairs = Pairs()
    for n in lengths:
        done = threading.Event()

        def compile_one(n: int = n, done: threading.Event = done) -> None:
            try:
                options = CompileOptions(backend, "false")  # static: every length a new graph to compile
                for _ in CompileTrack(f"interference-{n}").run(service, "transformer",
                                                                config_dict(make_config("transformer")),
                                                                "transformer", options, [encode(sentence(n, n))]):
                    if every_core and service.pid:  # as if there were no separation
                        os.sched_setaffinity(service.pid, os.sched_getaffinity(0) | machine.MEASURE_CORES)
            finally:
                done.set()

        thread = threading.Thread(target=compile_one, daemon=True)
        thread.start()
        done.wait(2.0)  # the worker is past start-up, generating and compiling C++
        while service.pid is None and not done.is_set():  # (a loaded machine: its worker not started yet)
            time.sleep(0.05)
        first, start = True, len(pairs.during)
        while first or (not done.is_set() and len(pairs.during) - start < most):  # at least one pair per round
            pid = service.pid
            if pid is None:  # no worker to freeze: no pair (both samples were once taken as "during")
                break
            order = (True, False) if len(pairs.during) % 2 == 0 else (False, True)
            for running in order:
                if running:
                    pairs.during.append(sample())
                else:
                    with _frozen(pid):
                        pairs.alone.append(sample())
            first = False
        thread.join()
    return pairs


def _row(what: str, p: Pairs) -> str:
    r = p.ratios()
    q1, _, q3 = statistics.quantiles(r, n=4) if len(r) > 1 else (r[0], r[0], r[0])
    return (f"| {what} | {len(r)} | {statistics.median(p.alone):.3f} | {statistics.median(p.during):.3f} | "
            f"**{statistics.median(r):.3f}x** | {q1:.3f}-{q3:.3f}x | {min(r):.2f}-{max(r):.2f}x |")


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-interference.md").parse_args(argv)
    lengths = [11] if args.quick else list(range(21, 41, 2))
    backend = "eager" if args.quick else "inductor"
    most = 2 if args.quick else 1_000  # pairs per compile
    machine.keep_off_measure_cores()  # as the app does at start-up: the worker inherits it
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        service = WorkerProcess(timeout_s=600)
        try:
            kept_apart = _pairs(service, lengths, every_core=False, backend=backend, most=most)
            service.stop()
            shared = _pairs(service, [n + 100 for n in lengths], every_core=True, backend=backend, most=most)
        finally:
            service.stop()
    m = machine.describe()
    lines = ["# A compile next to a timing", "",
             f"Measured by `python -m bench.compile_interference` on {m['device']} ({m['cpu']}, {m['cores']} cores), "
             f"{m['threads']} measurement thread(s), measuring core(s) {m['measure_cores']}, torch {m['torch']}, "
             f"{time.strftime('%Y-%m-%d')}. Reference: the eager forward of `{REFERENCE[0]}` on a "
             f"{len(REFERENCE[1].encode())}-token sentence, each sample a Playground timing (median of its blocks, "
             f"{FORWARD_BUDGET_S} s budget). The compile: {backend}, empty cache, the transformer at "
             f"{len(lengths)} new lengths with dynamic=false (each a full compile, C++ compiler included).", "",
             "Each pair: one timing while the worker compiles, one with the worker and its compiler frozen "
             "(SIGSTOP/SIGCONT), back to back in alternating order, so that the VM's drift cancels in the ratio.", "",
             "| worker | pairs | median alone ms | median while compiling ms | median ratio | IQR of ratios | "
             "min-max ratio |", "|---|---:|---:|---:|---:|---:|---:|",
             _row("kept off the measuring core (the app)", kept_apart),
             _row("on every core (no separation)", shared)]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
