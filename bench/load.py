"""Load test over loopback: many gradio_client sessions typing and changing architectures at once.

`python -m bench.load [--sessions 30] [--duration 120] [--mode typing|class|hall] [--warm-up] [--profile]` starts the
app on a free local port, measures a reference input alone, then runs the sessions for the duration while re-measuring
the reference, measures it alone again, and appends the figures to bench/RESULTS-load.md. In `typing` mode each
session edits back to back, with no pause. In `class` mode every session first opens the same state link (one input,
at once), then works as a lecture does: it pauses 0.5-2 s after each view, and half the class types the teacher's
example word by word on the link's architecture while the other half types its own words and changes architectures. In
`hall` mode (the pattern of an independent load run, issue #51) every session types without stopping, 0.5-2 s between
edits: half type the class's shared example on the RNN a word or two at a time, half sentences of their own, 1 to 40
words, on one of the four zoo models each. `--warm-up` starts the app as a teacher does, its start-up warm-up
(inductor's caches, then every claim) running while the students arrive. `--profile` samples the server process with
py-spy over the load and adds its CPU by phase (bench/phases.py). The test suite runs a short version
(tests/app/test_load.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import multiprocessing
import os
import random
import resource
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path

from gradio_client import Client

from bench import phases
from bench.appserver import connect, start_app, stop_app
from bench.common import parser

REFERENCE = ("rnn", "{}", "The reference sentence, measured alone and under load: 64 tokens!!")
ALONE = 5  # reference samples alone, before the load and again after it
NICE = 19
POLL_S = 0.05  # how often a simulated student looks for its streamed view (the generator's own CPU is the server's)
LINK = ("transformer", {"layers": 2}, "The sentence every student opens from the teacher's link.")
EXAMPLE = ("Every student types the example the teacher wrote on the board, word by word, and watches the graph "
           "grow with each token while the loops unroll")  # half a class types it after opening the link
PAUSE_S = (0.5, 2.0)  # class mode: a student reads each view before the next edit
STUDENTS_PER_PROCESS = 25
TEACHER_EVERY_S = 2.0
ARCHS = [("rnn", {"cell": c, "hidden": h}) for c in ("gru", "lstm", "rnn") for h in (16, 64)] + [
    ("transformer", {"layers": n, "width": w}) for n in (1, 2) for w in (32, 64)] + [
    ("early_exit", {"threshold": t}) for t in (0.5, 0.9)] + [("tree", {"hidden": h}) for h in (16, 64)]
WORDS = ("the", "graph", "grows", "with", "every", "token", "while", "loops", "unroll", "and", "branches",
         "decide", "what", "runs")


def config_json(values: dict) -> str:
    """A model's config as /edit takes it (the fields that differ from its defaults)."""
    return json.dumps(values)


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    to_graph: list[float] = field(default_factory=list)  # to the first view: the graph of the typed input
    by_model: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # model -> (to graph, to final)
    link: list[float] = field(default_factory=list)  # class mode: opening the shared link, to its final view
    page: list[float] = field(default_factory=list)  # each student's page (GET /), as a browser's first request
    connect: list[float] = field(default_factory=list)  # each student's connection (the app's config and API)
    first: list[float] = field(default_factory=list)  # hall mode: each student's first edit, to its final view
    link_reused: int = 0  # of those, how many showed timings measured for another session
    with_memory: int = 0  # final views that showed memory peaks (under load a new input's profile waits)
    errors: list[str] = field(default_factory=list)
    reference_ms: list[float] = field(default_factory=list)
    timings: list[dict] = field(default_factory=list)  # every eager timing the server reported: when, which cores
    machine: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, report: dict) -> None:
        with self.lock:
            self.timings += [report["eager"]["forward"], report["eager"]["train_step"]]
            self.machine = report["machine"]

    def data(self) -> dict:
        """Everything recorded, as plain data (what a student process sends back)."""
        with self.lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "lock"}

    def add(self, data: dict) -> None:
        """Another process's records, added to these."""
        with self.lock:
            for name, value in data.items():
                if isinstance(value, list):
                    getattr(self, name).extend(value)
                elif isinstance(value, dict) and name == "by_model":
                    for model, points in value.items():
                        self.by_model.setdefault(model, []).extend(points)
                elif name == "machine":
                    self.machine = value or self.machine
                else:
                    setattr(self, name, getattr(self, name) + value)


def _edit(client: Client, model: str, values: dict, text: str, tally: Tally) -> dict | None:
    """One edit, streamed: records the time to this input's graph and to the final view; the final report."""
    start = time.monotonic()
    try:
        job = client.submit(model, text, "", config_json(values), api_name="/edit")
        first, seen = None, 0
        while not job.done():  # a streamed view with this input's graph; the last has the timings and memory
            if first is None:
                outputs = job.outputs()
                if any(shows_graph(o, text) for o in outputs[seen:]):  # each view looked at once: a plot is big
                    first = time.monotonic() - start
                seen = len(outputs)
            time.sleep(POLL_S)
        out = job.result()
        report = out[4]
        if "eager" not in report:  # the run was not timed: its status says why
            raise RuntimeError(f"no timings in the final view: {out[5]}")
        tally.record(report)
        with tally.lock:
            tally.with_memory += report["memory"]["peak_train_bytes"] is not None
            tally.latencies.append(time.monotonic() - start)
            tally.to_graph.append(first if first is not None else tally.latencies[-1])
            tally.by_model.setdefault(model, []).append((tally.to_graph[-1], tally.latencies[-1]))
        return report
    except Exception as e:  # every failure counts: the goal is none
        with tally.lock:
            tally.errors.append(f"{type(e).__name__}: {e}"[:200])
        return None


def _user(url: str, seed: int, stop_at: float, tally: Tally, lecture: bool, hall: bool = False) -> None:
    rng = random.Random(seed)
    began = time.monotonic()
    try:  # the page, as a browser's first request asks for it: what the server answers each arriving visitor
        with urllib.request.urlopen(url, timeout=120) as page:
            page.read()
    except OSError as e:
        with tally.lock:
            tally.errors.append(f"the page: {type(e).__name__}: {e}"[:200])
        return
    paged = time.monotonic()
    client = connect(url)  # then the app's config and API description, fetched and parsed by gradio_client
    with tally.lock:
        tally.page.append(paged - began)
        tally.connect.append(time.monotonic() - paged)
    if lecture:  # the whole class opens the teacher's link at once
        start = time.monotonic()
        report = _edit(client, LINK[0], LINK[1], LINK[2], tally)
        if report is not None:
            with tally.lock:
                tally.link.append(time.monotonic() - start)
                tally.link_reused += (report["eager"].get("timing_note") or "").startswith("Timings reused")
    if lecture and seed % 2 == 0:
        _follow_the_board(client, rng, stop_at, tally)
        return
    if hall:
        _in_the_hall(client, rng, seed, stop_at, tally)
        return
    model, values = rng.choice(ARCHS)
    n = 0
    while time.monotonic() < stop_at:
        if n % 3 == 2:
            model, values = rng.choice(ARCHS)  # an architecture change
        _edit(client, model, values, " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))), tally)
        n += 1
        if lecture:
            time.sleep(rng.uniform(*PAUSE_S))


def _in_the_hall(client: Client, rng: random.Random, seed: int, stop_at: float, tally: Tally) -> None:
    """Type without stopping: the class's example on the RNN (even seeds), or one's own sentences on a zoo model."""
    words = EXAMPLE.split()
    model = ("rnn", "transformer", "tree", "early_exit")[(seed // 2) % 4]  # (the odd seeds': each model in turn)
    n, mine, length = rng.randint(1, 3), [], rng.randint(1, 40)
    started = time.monotonic()
    while time.monotonic() < stop_at:
        if seed % 2 == 0:
            _edit(client, "rnn", {}, " ".join(words[:n]), tally)
            n = n + rng.randint(1, 2) if n < len(words) else 1
        else:
            if len(mine) >= length:
                mine, length = [], rng.randint(1, 40)  # a new sentence
            mine.append(rng.choice(WORDS))
            _edit(client, model, {}, " ".join(mine), tally)
        if started:  # the first event of a session arriving with everyone else
            with tally.lock:
                tally.first.append(time.monotonic() - started)
            started = 0.0
        time.sleep(rng.uniform(*PAUSE_S))


def _follow_the_board(client: Client, rng: random.Random, stop_at: float, tally: Tally) -> None:
    """Type the teacher's example a word or two at a time on the link's architecture, pausing after each view;
    from its start again at its end. Students who reach the same words send the same input."""
    words = EXAMPLE.split()
    n = rng.randint(1, 3)  # not all in step
    while time.monotonic() < stop_at:
        _edit(client, LINK[0], LINK[1], " ".join(words[:n]), tally)
        time.sleep(rng.uniform(*PAUSE_S))
        n = n + rng.randint(1, 2) if n < len(words) else 1


def shows_graph(output: tuple, text: str) -> bool:
    """Whether a streamed /edit output carries the graph of `text` (an output left unchanged is not a plot): its
    title names the input's tokens, on one line or wrapped ("tree hidden=16, 64<br>tokens": until this read the
    wrapped title too, such a graph counted as arriving with the final view)."""
    plot = output[0].get("plot") if isinstance(output[0], dict) else None
    return bool(plot) and f", {len(text.encode())} tokens" in plot.replace("<br>", " ")


def reference_ms(client: Client, tally: Tally) -> float:
    report = client.predict(*REFERENCE, api_name="/inspect")
    tally.record(report)
    return report["eager"]["forward"]["median_ms"]


def overlapping(timings: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of distinct timings that ran on one core at the same time (there must be none). A timing reused
    for another session is reported again with the same span: it counts once."""
    distinct = {(t["start_s"], t["end_s"], tuple(t["cores"])): t for t in timings}.values()
    pairs = []
    for core in {c for t in distinct for c in t["cores"]}:
        spans = sorted((t for t in distinct if core in t["cores"]), key=lambda t: t["start_s"])
        pairs += [(a, b) for a, b in itertools.pairwise(spans) if b["start_s"] < a["end_s"]]
    return pairs


def _students(url: str, seeds: list[int], duration_s: float, lecture: bool, hall: bool = False) -> dict:
    """One process of simulated students (one thread each), at the lowest CPU priority; their records."""
    os.nice(NICE)
    tally, stop_at = Tally(), time.monotonic() + duration_s
    users = [threading.Thread(target=_user, args=(url, i, stop_at, tally, lecture, hall), daemon=True)
             for i in seeds]
    for u in users:
        u.start()
    for u in users:
        u.join(timeout=duration_s + 120)
    return tally.data()


def _teacher(url: str, stop_at: float, tally: Tally) -> None:
    """A client at normal priority editing every few seconds (the teacher's machine, or any student's browser,
    which has a machine of its own): what the server delivers, without the simulated students' wait for CPU."""
    client, n = connect(url), 0
    while time.monotonic() < stop_at - 5:
        n += 1
        _edit(client, "rnn", {"cell": "gru", "hidden": 16}, f"The teacher's edit number {n}, typed at the front.",
              tally)
        time.sleep(TEACHER_EVERY_S)


def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[int(0.95 * (len(xs) - 1))]


def run_load(url: str, sessions: int, duration_s: float, mode: str = "typing",
             on_load: Callable[[float], object] | None = None) -> dict:
    """Reference alone (5 calls), then `sessions` users for `duration_s` with the reference re-measured and a
    teacher's edits timed, then the reference alone again (5 calls). The simulated students (real ones are
    browsers on their own machines) run at the lowest CPU priority, on any core, STUDENTS_PER_PROCESS to a
    process: they take what the app leaves idle, and neither its measuring core nor its server core waits for
    them. In one process, a hundred students' clients queued for its one interpreter lock: a student saw its
    graph seconds after the server had sent it (bench/RESULTS-load.md)."""
    probe = connect(url)
    tally = Tally()
    for _ in range(2):  # warm: the measurement process's first jobs pay one-time costs
        reference_ms(probe, Tally())
    alone = [reference_ms(probe, tally) for _ in range(ALONE)]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    groups = [list(range(sessions))[i::math.ceil(sessions / STUDENTS_PER_PROCESS)]
              for i in range(math.ceil(sessions / STUDENTS_PER_PROCESS))]
    with ProcessPoolExecutor(len(groups), mp_context=multiprocessing.get_context("spawn")) as pool:
        classes = [pool.submit(_students, url, seeds, duration_s, mode == "class", mode == "hall") for seeds in groups]
        stop_at = time.monotonic() + duration_s
        teacher = Tally()
        taught = threading.Thread(target=_teacher, args=(url, stop_at, teacher), daemon=True)
        taught.start()
        os.nice(NICE)  # this thread's reference calls, back to back, take only what the app leaves idle
        if on_load:  # e.g. a profiler, over the load only
            on_load(duration_s)
        time.sleep(min(5.0, duration_s / 4))  # let the load build up
        while time.monotonic() < stop_at - 1:
            try:
                tally.reference_ms.append(reference_ms(probe, tally))
            except Exception as e:
                tally.errors.append(f"reference: {type(e).__name__}: {e}"[:200])
        for done in classes:
            tally.add(done.result())
        taught.join(timeout=120)
    with contextlib.suppress(PermissionError):  # back to where it was (allowed as root; else it stays low)
        os.nice(-NICE)
    students = resource.getrusage(resource.RUSAGE_CHILDREN)  # the student processes, reaped by the pool
    # Alone again, after: this VM drifts between a fast and a slow mode for minutes at a time, and a reference
    # taken only before the load compared the load with whichever mode the start happened to be in.
    alone += [reference_ms(probe, tally) for _ in range(ALONE)]
    lat = sorted(tally.latencies)
    graph = sorted(tally.to_graph)
    return {
        "sessions": sessions, "duration_s": duration_s, "interactions": len(lat), "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
        "p50_s": statistics.median(lat) if lat else None,
        "p95_s": _p95(lat) if lat else None,
        "graph_p50_s": statistics.median(graph) if graph else None,
        "by_model": {m: (_p95([g for g, _ in xs]), _p95([f for _, f in xs]), len(xs))
                     for m, xs in sorted(tally.by_model.items())},
        "link_p50_s": statistics.median(tally.link) if tally.link else None,
        "link_max_s": max(tally.link) if tally.link else None,
        "link_first_s": min(tally.link) if tally.link else None,
        "link_opened": len(tally.link), "link_reused": tally.link_reused,
        "first_p50_s": statistics.median(tally.first) if tally.first else None,
        "first_max_s": max(tally.first) if tally.first else None,
        "page_p50_s": statistics.median(tally.page) if tally.page else None,
        "page_max_s": max(tally.page) if tally.page else None,
        "connect_p50_s": statistics.median(tally.connect) if tally.connect else None,
        "connect_max_s": max(tally.connect) if tally.connect else None,
        "graph_p95_s": _p95(graph) if graph else None,
        "with_memory": tally.with_memory,
        "teacher": {"edits": len(teacher.latencies), "errors": len(teacher.errors),
                    "graph_p50_s": statistics.median(teacher.to_graph) if teacher.to_graph else None,
                    "graph_p95_s": _p95(teacher.to_graph) if teacher.to_graph else None,
                    "p50_s": statistics.median(teacher.latencies) if teacher.latencies else None,
                    "p95_s": _p95(teacher.latencies) if teacher.latencies else None},
        "students_cpu_s": (students.ru_utime + students.ru_stime) - (children.ru_utime + children.ru_stime),
        "student_processes": len(groups),
        "reference_alone_ms": statistics.median(alone),
        "reference_loaded_ms": statistics.median(tally.reference_ms) if tally.reference_ms else None,
        # This VM's timings are bimodal (~1x or ~1.8x) with or without load: the best of each set shows
        # whether load itself corrupts a timing, the medians what a person saw.
        "reference_alone_min_ms": min(alone),
        "reference_loaded_min_ms": min(tally.reference_ms) if tally.reference_ms else None,
        "reference_samples": len(tally.reference_ms),
        "timings": len(tally.timings),
        "overlapping_timings": len(overlapping(tally.timings)),
        "timing_cores": sorted({tuple(t["cores"]) for t in tally.timings}),
        "measure_cores": tally.machine.get("measure_cores"),
        "other_cores": tally.machine.get("other_cores"),
        "machine": {k: tally.machine.get(k) for k in ("device", "cpu", "cores", "torch")},  # the app's, as it said
    }


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def _cpu_s(pid: int) -> float:
    """CPU seconds a process and its reaped children used (from /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> set[int]:
    found = set()
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _workers_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds of each living process under the app, by pid: its fork server and the measurement and compile
    workers forked from it (grandchildren of the app: counting the app's children alone read the fork server's
    idle seconds only). A process's reaped children count in its own figure."""
    out: dict[int, float] = {}
    todo = list(_children(pid))
    while todo:
        child = todo.pop()
        with contextlib.suppress(OSError):
            out[child] = _cpu_s(child)
        todo += _children(child)
    return out


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "RESULTS-load.md")
    p.add_argument("--sessions", type=int, default=30)
    p.add_argument("--duration", type=float, default=120.0)
    p.add_argument("--mode", choices=("typing", "class", "hall"), default="typing",
                   help="class: every session first opens the same state link, then types; hall: every session "
                   "types without stopping, half the class's example on the RNN, half their own sentences")
    p.add_argument("--warm-up", action="store_true", help="start the app with its start-up warm-up on (inductor's "
                   "caches, then every claim), running while the students arrive")
    p.add_argument("--cpus", default=None, help="run the app on these cores only, as `taskset -c` (default: all)")
    p.add_argument("--json", type=Path, default=None, help="also write every raw figure of the run here")
    p.add_argument("--profile", action="store_true",
                   help="sample the server process with py-spy over the load: its CPU by phase (needs py-spy)")
    args = p.parse_args(argv)
    if args.profile and not phases.py_spy():
        p.error("--profile needs py-spy: pip install py-spy")
    if args.quick:
        args.sessions, args.duration = 2, 4.0
    warm = {"GE_WARM_COMPILE": "1", "GE_WARM_CLAIMS": "1",
            "GE_CLAIMS_FILE": str(Path(tempfile.mkdtemp(prefix="ge-claims-")) / "claims.json")} if args.warm_up else {}
    proc, url, _ = start_app(warm, cpus=args.cpus)
    stacks = Path(tempfile.mkdtemp(prefix="ge-load-")) / "stacks.txt"
    spy: list = []
    at_load: dict[int, float] = {}  # the app's worker processes' CPU seconds when the load began

    def on_load(seconds: float) -> None:
        at_load.update(_workers_cpu_s(proc.pid))  # after their start-up and the warm-up calls
        if args.profile:
            spy.append(phases.record(proc.pid, seconds, stacks))

    try:
        cpu = _cpu_s(proc.pid), resource.getrusage(resource.RUSAGE_SELF)
        r = run_load(url, args.sessions, args.duration, args.mode, on_load)
        for sampler in spy:
            sampler.wait(timeout=60)
        after = resource.getrusage(resource.RUSAGE_SELF)
        r["app_cpu_s"] = _cpu_s(proc.pid) - cpu[0]
        # totals, not per process: a worker that exited meanwhile counts in its parent's reaped children
        r["workers_cpu_s"] = sum(_workers_cpu_s(proc.pid).values()) - sum(at_load.values())
        r["generator_cpu_s"] = (after.ru_utime + after.ru_stime - cpu[1].ru_utime - cpu[1].ru_stime
                                + r["students_cpu_s"])
    finally:
        stop_app(proc)
    ratio = r["reference_loaded_ms"] / r["reference_alone_ms"] if r["reference_loaded_ms"] else float("nan")
    ray = os.environ.get("GE_RAY_ADDRESS")
    command = ((f"GE_RAY_ADDRESS={ray} " if ray else "")
               + f"python -m bench.load --sessions {args.sessions} --duration {args.duration:g} --mode {args.mode}"
               + (" --warm-up" if args.warm_up else "")
               + (f" --cpus {args.cpus}" if args.cpus else "") + (" --profile" if args.profile else ""))
    cores = len(set(r["measure_cores"] or []) | set(r["other_cores"] or []))  # what the app was allowed
    rate = r["interactions"] / args.duration
    link = (f"- class: {r['link_opened']} sessions opened the same link at once: to its final view first "
            f"{r['link_first_s']:.2f} s, median {r['link_p50_s']:.2f} s, last {r['link_max_s']:.2f} s; "
            f"{r['link_reused']} of them were shown timings measured for another session. Before that, each "
            f"connected (fetched the app's config and API description, as a browser loads the page) in a median "
            f"{r['connect_p50_s']:.2f} s, the slowest {r['connect_max_s']:.2f} s"
            if r["link_opened"] else None)
    arrival = (f"- arriving at once: each session's page (`GET /`, a browser's first request) answered in a median "
               f"{r['page_p50_s']:.2f} s, the slowest {r['page_max_s']:.2f} s; then its simulated client connected "
               f"(gradio_client fetching and parsing the app's config and API description in the load generator, at "
               f"nice 19 beside the server) in a median {r['connect_p50_s']:.2f} s, the slowest "
               f"{r['connect_max_s']:.2f} s; its first edit reached its final view in a median "
               f"{r['first_p50_s']:.2f} s, the slowest {r['first_max_s']:.2f} s"
               if r["first_p50_s"] is not None else None)
    lines = [f"## {args.sessions} sessions for {args.duration:.0f} s, {args.mode}"
             + (", the start-up warm-up running" if args.warm_up else "") + f" ({time.strftime('%Y-%m-%d %H:%M')})",
             "", f"`{command}`", "",
             "Measured on {device} ({cpu}, {cores} cores), torch {torch}".format(**r["machine"]), "",
             *filter(None, [link, arrival]),
             f"- interactions: {r['interactions']}, errors: {r['errors']} {r['error_samples'] or ''}; throughput "
             f"{rate:.2f} interactions/s on {cores} core(s): {rate / max(cores, 1):.2f} per core",
             f"- CPU seconds over the run: the app's server process {r['app_cpu_s']:.0f} "
             f"({1000 * r['app_cpu_s'] / max(r['interactions'], 1):.0f} ms per interaction), its measurement and "
             f"compile processes {r['workers_cpu_s']:.0f} (from the load's start), the load generator "
             f"(the simulated students, {r['student_processes']} process(es) at nice {NICE} on any core) "
             f"{r['generator_cpu_s']:.0f}",
             f"- latency per interaction (typing or an architecture change): to the graph of the typed input "
             f"p50 {r['graph_p50_s']:.2f} s, p95 {r['graph_p95_s']:.2f} s; to the final view (timings and memory) "
             f"p50 {r['p50_s']:.2f} s, p95 {r['p95_s']:.2f} s; {r['with_memory']} of the {r['interactions']} final "
             "views showed memory peaks",
             f"- a teacher's client at normal priority (an edit every {TEACHER_EVERY_S:g} s, {r['teacher']['edits']} "
             f"edits, {r['teacher']['errors']} errors): to the graph p50 {_s(r['teacher']['graph_p50_s'])}, p95 "
             f"{_s(r['teacher']['graph_p95_s'])}; to the final view p50 {_s(r['teacher']['p50_s'])}, p95 "
             f"{_s(r['teacher']['p95_s'])}",
             "- p95 per model, to the graph / to the final view (interactions): " + ", ".join(
                 f"{m} {g:.2f} / {f:.2f} s ({n})" for m, (g, f, n) in r["by_model"].items()),
             f"- {r['timings']} timings reported, {r['overlapping_timings']} overlapping; timed on cores "
             f"{r['timing_cores']}, server threads and compiles on {r['other_cores']}",
             f"- reference input (rnn, {len(REFERENCE[2].encode())} tokens) eager forward median: "
             f"alone (before and after the load, {2 * ALONE} samples) {r['reference_alone_ms']:.3f} ms, "
             f"under load {r['reference_loaded_ms']:.3f} ms ({r['reference_samples']} samples): "
             f"{ratio:.2f}x; best of each {r['reference_alone_min_ms']:.3f} vs {r['reference_loaded_min_ms']:.3f} ms",
             ""]
    if spy and stacks.exists():
        lines[-1:] = ["The server's CPU by phase (py-spy, 100 samples a second over the load, each stack charged to "
                      "its innermost frame that names a phase; ms per interaction = share x the line above):", "",
                      *phases.Phases.of(stacks).table(r["app_cpu_s"], r["interactions"]), ""]
    header = "# Load test: concurrent gradio_client sessions over loopback\n\n" if not args.out.exists() else ""
    with args.out.open("a") as f:
        f.write(header + "\n".join(lines) + "\n")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(r, default=str))


if __name__ == "__main__":
    main()
