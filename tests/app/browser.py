"""What the browser scenarios share: the page's controls and cards as a person finds them, and screenshots.

Every scenario leaves a screenshot under test-artifacts/ (git-ignored)."""

import re
from pathlib import Path

from playwright.sync_api import BrowserContext, Locator, Page, expect

from bench.common import WATCH_JS

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


# Gradio 6.31 draws a tab or an accordion's components when it is first opened, then, after a frame, sets each to the
# value it had when the page loaded (Blocks' render_previously_invisible_children): what is typed, ticked or chosen
# in that moment is undone (CI lost a typed 12 to the default 32 twice). Each page counts those passes as they end.
_SHOWN_JS = """(() => { window.geShown = 0; window.geShowing = 0; const ask = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => {
    if (!(new Error().stack || '').includes('render_previously_invisible_children')) return ask(callback);
    window.geShowing += 1;  // its values are set right after this frame: counted once they are
    return ask((t) => { callback(t); setTimeout(() => { window.geShowing -= 1; window.geShown += 1; }); });
  }; })();"""


def counting_shown(context: BrowserContext) -> BrowserContext:
    """Every page of `context` counts Gradio's passes over what a first opening shows (see `opened`)."""
    context.add_init_script(_SHOWN_JS)
    return context


def opened(page: Page, target: Locator) -> None:
    """Open a tab or an accordion not opened before in this page, as a person does, and wait until Gradio has drawn
    its components and set their values: only then is what a person types in it kept."""
    before = page.evaluate("window.geShown")
    target.click()
    page.wait_for_function(f"window.geShown > {before} && window.geShowing === 0", timeout=TIMEOUT)


def loaded(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator(".card").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("(cpu, core").first).to_be_visible(timeout=TIMEOUT)


INPUT = "input (each UTF-8 byte is one token)"


def type_in(page: Page, text: str) -> None:
    """Replace the input's text (every settled change runs it: no key press, no button)."""
    page.get_by_label(INPUT).fill(text)


def loaded_short(page: Page, url: str) -> None:
    """The page opened on a 9-token input by its state link (one run; typing it would run the default's first): what
    a compile or an export of the unrolled RNN costs grows with the unroll."""
    loaded(page, url + "?model=rnn&text=Hi%20there.")
    expect(page.locator(".card .value").first).to_have_text("9", timeout=TIMEOUT)


# Every text of a plot: its box and font size (plotly draws text as SVG <text>).
_PLOT_TEXTS = """(root) => [...root.querySelectorAll('svg text')]
  .filter((t) => t.textContent.trim() && t.getClientRects().length)
  .map((t) => { const r = t.getBoundingClientRect();
    return {text: t.textContent.trim().slice(0, 40), x: r.x, y: r.y, w: r.width, h: r.height,
            size: parseFloat(getComputedStyle(t).fontSize)}; })"""


def plot_texts(page: Page, plot: Locator) -> list[dict]:
    """The texts of a `.js-plotly-plot`: title, legend, ticks, labels, each with its box and font size."""
    return page.evaluate(_PLOT_TEXTS, plot.element_handle())


# Every line of every text on the page under `root` outside plots: a text node's boxes, one per line it takes, each
# cut to the middle half of its height (an inline box is taller than its line when the line height is under ~1.2:
# neighbouring lines' boxes touch where their letters do not).
_TEXT_LINES = """(root) => {
  const out = [];
  let node = 0;
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement;
    if (!n.textContent.trim() || e.closest('svg') || !e.getClientRects().length) continue;
    const style = getComputedStyle(e);
    if (style.visibility === 'hidden' || style.opacity === '0') continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    node += 1;
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      out.push({text: n.textContent.trim().slice(0, 40), x: r.x, y: r.y + r.height / 4, w: r.width, h: r.height / 2,
                size: parseFloat(style.fontSize), node});
    }
  }
  return out;
}"""


def text_lines(page: Page, root: Locator) -> list[dict]:
    """Every line of text under `root` (plots apart: `plot_texts`), with its box, font size and text node."""
    return page.evaluate(_TEXT_LINES, root.element_handle())


def lines_over_lines(lines: list[dict]) -> list[tuple[str, str]]:
    """Pairs of `text_lines` of different texts whose letters overlap."""
    return [(a["text"], b["text"]) for i, a in enumerate(lines) for b in lines[i + 1:]
            if a["node"] != b["node"] and overlaps([a, b])]


def overlaps(texts: list[dict]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than a pixel each way (a label over a label, a legend over a
    title)."""
    def cross(a: dict, b: dict) -> bool:
        return (min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"]) > 1
                and min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"]) > 1)
    return [(a["text"], b["text"]) for i, a in enumerate(texts) for b in texts[i + 1:] if cross(a, b)]


def paste(page: Page, text: str) -> None:
    """`text` through the clipboard and Ctrl+V, at the focused element, as a person pastes."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.evaluate("(t) => navigator.clipboard.writeText(t)", text)
    page.keyboard.press("Control+V")


_BROKEN_WORDS = """() => {
  const broken = [];
  for (const el of document.querySelectorAll('.card .value')) {
    if (!el.offsetParent) continue;  // hidden
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/[^\\s_]+_?/g)) {  // a word, up to the break after its underscore
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


def broken_words(page: Page) -> list[str]:
    """The visible cards' words that run over two lines (a word split between letters: "sequenc / e")."""
    return page.evaluate(_BROKEN_WORDS)


def watch_for(page: Page, pattern: re.Pattern[str]) -> None:
    """Record when the page first shows `pattern` from now on (read by `shown_after`)."""
    page.evaluate(WATCH_JS, pattern.pattern)


def shown_after(page: Page) -> float:
    """Milliseconds from `watch_for` until the page showed its pattern (waits for it, up to TIMEOUT)."""
    page.wait_for_function("window.geShownAfter !== null", timeout=TIMEOUT)
    return page.evaluate("window.geShownAfter")
