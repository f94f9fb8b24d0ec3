"""What the browser scenarios share: the page's controls and cards as a person finds them, and screenshots.

Every scenario leaves a screenshot under test-artifacts/ (git-ignored)."""

import re
from pathlib import Path

from playwright.sync_api import Page, expect

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TIMEOUT = 90_000  # ms: a compile or a lab run on a busy 2-core machine


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def card(page: Page, label: str) -> str:
    """The value shown on the metric card with this label."""
    return page.locator(".card", has=page.locator(".label", has_text=re.compile(f"^{label}$"))).locator(
        ".value").inner_text()


def nodes(page: Page) -> int:
    return int(card(page, "graph nodes").replace(",", ""))


def loaded(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator(".card").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("(cpu, core").first).to_be_visible(timeout=TIMEOUT)


INPUT = "input (each UTF-8 byte is one token)"


def type_in(page: Page, text: str) -> None:
    """Replace the input's text (every settled change runs it: no key press, no button)."""
    page.get_by_label(INPUT).fill(text)


def short_input(page: Page) -> None:
    """A 9-token input: what a compile or an export of the unrolled RNN costs grows with the unroll."""
    type_in(page, "Hi there.")
    expect(page.locator(".card .value").first).to_have_text("9", timeout=TIMEOUT)
