"""What one page load costs, in a real browser and on the server: `python -m bench.page_load`.

The real app (bench/appserver.py) opened in Debian's Chromium at 1280x720, each load in a fresh browser context
(a new visitor: no cache, no cookie), until the Playground's first run has settled (its cards, the core it was
timed on, no stage still measuring). Per load: the CPU-seconds of every Chromium process (the page's script,
style, layout and paint, and the browser's own), the renderer's main-thread seconds and the script's share of
them (Chrome's Performance metrics), and the CPU-seconds of the server and its workers (the page's config, its
load events, its first run). Then the page is left alone (IDLE_S): the CPU-seconds Chromium still spends on it, and
the animation frames its script asks for (Gradio's page keeps asking for one a frame while nothing moves). Beside
them, what the page's script walks at load: the app's components, its event dependencies and their inputs, and the
config's size. A student's phone in a room, a Space's visitor and every
browser test pay this for each page. Writes bench/RESULTS-page-load.md: median and min-max over LOADS."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.appserver import start_app, stop_app
from bench.common import SETTLED_JS, parser
from bench.cpu_per_test import stat, tree_cpu, used
from bench.screenshot import chromium_page, measure_on_an_app, results_page
from explorer.eager.compare import Comparison

LOADS = 10
PAIRS = 10  # with --against
IDLE_S, QUICK_IDLE_S = 10, 2  # seconds each loaded page is then left alone
# Counts the page's animation frames asked for (set before the page's own scripts: they keep a reference).
_FRAMES_JS = ("window.geFrames = 0; const geAsk = window.requestAnimationFrame.bind(window); "
              "window.requestAnimationFrame = (callback) => { window.geFrames += 1; return geAsk(callback); };")


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _chromium() -> dict[int, float]:
    """The CPU seconds so far of this process's Chromium processes (the browser Playwright started, and every
    process of it)."""
    return {pid: cpu for pid, cpu in tree_cpu(os.getpid()).items() if "chrom" in _name(pid) or "headless" in _name(pid)}


def _server() -> int:
    """This process's app server (started by it: bench/appserver.py, or the test process's shared app)."""
    tree = tree_cpu(os.getpid())
    server = next((pid for pid in tree if b"app.py" in _cmdline(pid) and b"app.py" not in _cmdline(_parent(pid))),
                  None)
    if server is None:  # (its seconds would read 0, as if measured)
        raise RuntimeError("no app server under this process: bench.page_load measures the app it started")
    return server


def _parent(pid: int) -> int:
    try:
        return int(stat(pid)[1])
    except (OSError, IndexError):
        return 0


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _load(browser: Any, url: str, server: int, idle_s: float) -> dict[str, float]:
    """One load in a fresh context: its seconds, by where they went (`server`: the app's process, with its
    workers); then the page left alone for `idle_s`: the CPU-seconds Chromium spends on it a minute, and the
    animation frames it asks for a second."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.add_init_script(_FRAMES_JS)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        chromium, served, start = _chromium(), tree_cpu(server), time.perf_counter()
        page.goto(url)
        page.wait_for_selector(".cards .card", timeout=120_000)
        page.wait_for_function(SETTLED_JS, timeout=120_000)
        wall = time.perf_counter() - start
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        chromium_after, served_after = _chromium(), tree_cpu(server)
        frames = page.evaluate("window.geFrames")
        time.sleep(idle_s)
        idle = used(chromium_after, _chromium())
        return {"chromium": used(chromium, chromium_after), "main": metrics["TaskDuration"],
                "script": metrics["ScriptDuration"], "server": used(served, served_after), "wall": wall,
                "idle": idle * 60 / idle_s, "frames": (page.evaluate("window.geFrames") - frames) / idle_s}
    finally:
        context.close()


def _shape(url: str) -> dict[str, int]:
    """What the page's script walks at load: the app's config, as the page fetches it."""
    raw = urllib.request.urlopen(f"{url.rstrip('/')}/config", timeout=60).read()
    config = json.loads(raw)
    deps = config["dependencies"]
    return {"components": len(config["components"]), "dependencies": len(deps),
            "inputs": sum(len(d["inputs"]) for d in deps), "kib": len(raw) // 1024}


def measure(page: Any, url: str, quick: bool) -> list[str]:
    """The results table's rows, measured in `page`'s browser on the app at `url` (the tests pass theirs)."""
    idle_s, server = QUICK_IDLE_S if quick else IDLE_S, _server()
    _load(page.context.browser, url, server, 0.5)  # untimed: the server's first page (its first run's capture)
    loads = [_load(page.context.browser, url, server, idle_s) for _ in range(1 if quick else LOADS)]
    shape = _shape(url)
    rows = [f"| the app's config | {shape['components']} components, {shape['dependencies']} event dependencies "
            f"({shape['inputs']:,} inputs in all), {shape['kib']:,} KiB | | |"]
    for key, what in (("chromium", "Chromium's CPU-seconds (every process)"),
                      ("main", "the renderer's main-thread seconds"), ("script", "of which the page's script"),
                      ("server", "the server's CPU-seconds (and its workers')"),
                      ("wall", "seconds until the first run settled"),
                      ("idle", "then left alone: Chromium's CPU-seconds a minute"),
                      ("frames", "then left alone: animation frames the page asks for a second")):
        values = [load[key] for load in loads]
        rows.append(f"| {what} | {statistics.median(values):.2f} | {min(values):.2f}-{max(values):.2f} | "
                    f"{len(values)} |")
    return rows


PAIRED = {"chromium": "Chromium's CPU-seconds (every process)", "main": "the renderer's main-thread seconds",
          "script": "of which the page's script", "server": "the server's CPU-seconds (and its workers')",
          "wall": "seconds until the first run settled",
          "idle": "then left alone: Chromium's CPU-seconds a minute",
          "frames": "then left alone: animation frames the page asks for a second"}


def paired(page: Any, here: tuple[str, int], there: tuple[str, int], pairs: int, idle_s: float) -> list[str]:
    """The results table's rows: loads of two apps (`here`, `there`: each its url and server's pid) in pairs, which
    one loads first alternating, each load's seconds against its pair's (a pair: the same minute of the machine)."""
    browser = page.context.browser
    for url, server in (here, there):
        _load(browser, url, server, 0.5)  # untimed: each server's first page
    loads: dict[str, list[dict[str, float]]] = {"here": [], "there": []}
    for i in range(pairs):
        sides = [("here", here), ("there", there)]
        for side, (url, server) in sides if i % 2 == 0 else sides[::-1]:
            loads[side].append(_load(browser, url, server, idle_s))
    rows = []
    for key, what in PAIRED.items():
        c = Comparison.of("this checkout", "the other", [x[key] for x in loads["here"]],
                          [x[key] for x in loads["there"]])
        rows.append(f"| {what} | {statistics.median(c.a_ms):.2f} | {statistics.median(c.b_ms):.2f} | {c.ratio:.2f} "
                    f"({c.interval()}) | {sum(x < y for x, y in zip(c.a_ms, c.b_ms, strict=True))} of {c.pairs} |")
    return rows


def results(rows: list[str], quick: bool) -> str:
    return results_page(
        "What one page load costs", "page_load", quick,
        "Each sample: the app opened in a fresh browser context until the Playground's first run settled (after one "
        f"untimed load: the server's first page), then left alone for {QUICK_IDLE_S if quick else IDLE_S} s. "
        "CPU-seconds read "
        "from /proc for Chromium's processes and for the server with its workers; main-thread and script seconds from "
        "Chrome's Performance metrics; animation frames counted by a wrapper of requestAnimationFrame set before the "
        "page's scripts.",
        ["| per page load | median | min-max | loads |", "|---|---:|---|---:|"], rows)


def paired_results(rows: list[str], quick: bool, checkout: Path) -> str:
    return results_page(
        "What one page load costs, against another checkout", f"page_load --against {checkout}", quick,
        f"This checkout's app and that of {_revision(checkout)}, both started here, loaded in pairs (which first "
        "alternating; each load in a fresh browser context until the Playground's first run settled, after one "
        f"untimed load of each, then left alone for {QUICK_IDLE_S if quick else IDLE_S} s). Each ratio: the median "
        "over the pairs of this checkout's load over its pair's, with its interval (below 1: this checkout's load "
        "costs less). The pairs come from this one run, so they share its spell of the machine: a second run says "
        "whether a ratio holds.",
        ["| per page load | this checkout, median | the other, median | this / the other | pairs below 1 |",
         "|---|---:|---:|---|---:|"], rows)


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "RESULTS-page-load.md")
    p.add_argument("--against", type=Path, metavar="CHECKOUT",
                   help="another checkout of the app (`git worktree add /tmp/before HEAD~1`): loads of both in pairs, "
                        "written to bench/RESULTS-page-load-against.md unless --out says where")
    args = p.parse_args(argv)
    if args.against is None:
        measure_on_an_app(measure, results, args.out, args.quick)
        return
    default = p.get_default("out")
    out = default.with_name("RESULTS-page-load-against.md") if args.out == default else args.out
    apps = [start_app(), start_app(root=args.against)]
    try:
        with chromium_page() as page:
            rows = paired(page, *((url, proc.pid) for proc, url, _ in apps), pairs=2 if args.quick else PAIRS,
                          idle_s=QUICK_IDLE_S if args.quick else IDLE_S)
    finally:
        for proc, _, _ in apps:
            stop_app(proc)
    out.write_text(paired_results(rows, args.quick, args.against))
    print(out.read_text())


def _revision(checkout: Path) -> str:
    """`checkout` and the commit it is at (the one the results compare with)."""
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    return f"`{checkout}` (at {head})" if head else f"`{checkout}`"


if __name__ == "__main__":
    main()
