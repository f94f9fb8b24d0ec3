"""Screenshot of a running app for the README: `python -m bench.screenshot URL OUT.png`.

Uses Debian's Chromium (/usr/bin/chromium) through Playwright; never a downloaded browser.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from bench.appserver import start_app, stop_app
from bench.common import TITLES_JS, measured_by

HEIGHT = 1500  # the tabs, the knobs, the input, the cards, the graph and the history: the Playground's first part
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def chromium_page(width: int = 1280, height: int = 720) -> Iterator[Any]:
    """A page of Debian's Chromium (headless, never a downloaded browser), closed afterwards."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def measure_on_an_app(measure: Callable[[Any, str, bool], list[str]], results: Callable[[list[str], bool], str],
                      out: Path, quick: bool, env: dict[str, str] | None = None) -> None:
    """A Chromium benchmark's run: the real app started with `env`, `measure(page, url, quick)` in a Chromium page,
    the app stopped, `results(rows, quick)` written to `out` (the tests call `measure` on their own app instead)."""
    proc, url, _ = start_app(env)
    try:
        with chromium_page() as page:
            rows = measure(page, url, quick)
    finally:
        stop_app(proc)
    out.write_text(results(rows, quick))
    print(out.read_text())


def results_page(title: str, script: str, quick: bool, how: str, header: list[str], rows: list[str]) -> str:
    """A Chromium benchmark's results file: its title, how it was measured (in Debian's Chromium at 1280x720,
    `how` each sample), then its table."""
    return "\n".join([f"# {title}", "", f"{measured_by(script, quick)}, Debian Chromium headless at 1280x720. "
                      f"{how}", "", *header, *rows]) + "\n"


def main(url: str, out: str, text: str | None = None) -> None:
    with chromium_page(1400, HEIGHT) as page:
        page.goto(url)
        page.wait_for_selector(".cards .card", timeout=60_000)
        page.wait_for_function("document.querySelector('.cards').innerText.includes('MiB') ||"
                               " document.querySelector('.cards').innerText.includes('KiB')", timeout=60_000)
        if text:
            box = page.get_by_label("input (each UTF-8 byte is one token)")
            box.fill(text)
            # this input's run drawn: its token count on the first card, and the graph's title
            page.wait_for_function(f"n => document.querySelector('.card .value').innerText.trim() === String(n) && "
                                   f"({TITLES_JS})().includes(n + ' tokens')", arg=len(text.encode()),
                                   timeout=60_000)
        page.wait_for_timeout(1500)
        page.screenshot(path=out, clip={"x": 0, "y": 0, "width": 1400, "height": HEIGHT})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
