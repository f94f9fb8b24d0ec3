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
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import SETTLED_JS, parser
from bench.cpu_per_test import stat, tree_cpu, used
from bench.screenshot import measure_on_an_app, results_page

LOADS = 10
IDLE_S, QUICK_IDLE_S = 10, 2  # seconds each loaded page is then left alone
# Counts the page's animation frames asked for (set before the page's own scripts: they keep a reference).
_FRAMES_JS = ("window.geFrames = 0; const geAsk = window.requestAnimationFrame.bind(window); "
              "window.requestAnimationFrame = (callback) => { window.geFrames += 1; return geAsk(callback); };")


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _readings() -> tuple[dict, dict]:
    """The CPU seconds so far of this process's Chromium processes (the browser Playwright started, and every
    process of it) and of its app's server with the server's workers (started by this process: bench/appserver.py,
    or the test process's shared app)."""
    tree = tree_cpu(os.getpid())
    chromium = {pid: cpu for pid, cpu in tree.items() if "chrom" in _name(pid) or "headless" in _name(pid)}
    server = next((pid for pid in tree if b"app.py" in _cmdline(pid) and b"app.py" not in _cmdline(_parent(pid))),
                  None)
    if server is None:  # (its seconds would read 0, as if measured)
        raise RuntimeError("no app server under this process: bench.page_load measures the app it started")
    return chromium, tree_cpu(server)


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


def _load(browser: Any, url: str, idle_s: float) -> dict[str, float]:
    """One load in a fresh context: its seconds, by where they went; then the page left alone for `idle_s`: the
    CPU-seconds Chromium spends on it a minute, and the animation frames it asks for a second."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.add_init_script(_FRAMES_JS)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        (chromium, server), start = _readings(), time.perf_counter()
        page.goto(url)
        page.wait_for_selector(".cards .card", timeout=120_000)
        page.wait_for_function(SETTLED_JS, timeout=120_000)
        wall = time.perf_counter() - start
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        chromium_after, server_after = _readings()
        frames = page.evaluate("window.geFrames")
        time.sleep(idle_s)
        idle = used(chromium_after, _readings()[0])
        return {"chromium": used(chromium, chromium_after), "main": metrics["TaskDuration"],
                "script": metrics["ScriptDuration"], "server": used(server, server_after), "wall": wall,
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
    idle_s = QUICK_IDLE_S if quick else IDLE_S
    _load(page.context.browser, url, 0.5)  # untimed: the server's first page (its first run's capture, timing)
    loads = [_load(page.context.browser, url, idle_s) for _ in range(1 if quick else LOADS)]
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


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "RESULTS-page-load.md").parse_args(argv)
    measure_on_an_app(measure, results, args.out, args.quick)


if __name__ == "__main__":
    main()
