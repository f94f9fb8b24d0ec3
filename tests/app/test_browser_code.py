"""The Code tab in a real browser, edited as a person edits (a few lines pasted, then keys typed): an `if` on the
data added to the RNN's forward shows in the graph's diff and breaks dynamo's graph at its line, a syntax error is
said at its line while the previous graph stays, the edit's link opens it elsewhere, and an early exit edited to
run every block traces correctly."""

import json
import re
import time
import urllib.request

import pytest
from playwright.sync_api import Page, Request, expect

from bench.common import SETTLED_JS
from explorer.code.debug import EDIT_MODES
from models.bugs import BUGS
from tests.app.browser import TIMEOUT, loaded, paste, shot
from tests.helpers import ROOT

pytestmark = pytest.mark.slow
LINE = next(i for i, line in enumerate((ROOT / "models" / "rnn.py").read_text().splitlines(), 1)
            if "new = cell(x, state)" in line)




def _events_run(page: Page, app_url: str) -> list[str]:
    """The names of the events the page asks the server to run from now on (a list that grows as they are sent)."""
    events = json.loads(urllib.request.urlopen(app_url + "config", timeout=60).read())["dependencies"]
    sent: list[str] = []

    def on_request(request: Request) -> None:
        if "/queue/join" in request.url or "/run/" in request.url:
            number = json.loads(request.post_data or "{}").get("fn_index")
            sent.append(events[number]["api_name"] if isinstance(number, int) else "?")
    page.on("request", on_request)
    return sent


def test_a_page_load_runs_no_opener_its_address_does_not_ask_for_and_leaves_no_complaint_in_the_servers_log(
        page: Page, app_url, app_log):
    """A plain visit (its address may carry Gradio's own parameters) runs none of the openers (the Playground's state
    link's, the lesson's, the room's, the Code tab's: explorer/ui/address.py), only its first run: each opener kept
    its outputs' loading status on every visitor's page, which Gradio's page walks at every status message (the
    state links, steps, rooms and edits they open are tested where they open). Every load also ran the Code tab's
    run with nothing to do, whose empty answer Gradio logged four times as "didn't return enough output values" (its
    toast drawn invisible)."""
    sent = _events_run(page, app_url)
    page.add_init_script(_COUNT_FRAMES)
    loaded(page, app_url + "?__theme=light")  # Gradio's own parameter (a Space's link may carry it): no state link
    assert "typed" in sent and not {"load", "open_lesson", "open_room", "linked"} & set(sent), sent
    # left alone, the page asks for fewer frames than the screen's 60 a second, which Gradio's status tracker asked
    # for, for good (explorer/ui/frames.py): in the quietest of six seconds (a run pending on the shared app, a
    # legitimately timed tracker, asks for more while it lasts)
    page.wait_for_function(SETTLED_JS, timeout=TIMEOUT)  # (its first run settled)
    seconds = []
    for _ in range(6):
        before, start = page.evaluate("window.frames_asked"), time.monotonic()
        page.wait_for_timeout(1_000)
        seconds.append((page.evaluate("window.frames_asked") - before) / (time.monotonic() - start))
    assert min(seconds) < 50, seconds  # 82 a second before, 32 after (bench/RESULTS-idle-page.md)
    page.get_by_role("tab", name="Code").click()
    expect(page.get_by_text(re.compile(r"^Built and ran in the code worker"))).to_be_visible(timeout=TIMEOUT)
    assert "didn't return enough output values" not in app_log.read_text()
    # the walls in force, in one line, and the same line in the start-up log
    walls = page.get_by_text(re.compile(r"^Walls around your code: Landlock ABI \d+ \(files, TCP, signals and "
                                        r"sockets\); seccomp"))
    expect(walls).to_be_visible()
    assert "MISSING" not in walls.inner_text() and walls.inner_text() in app_log.read_text()


# The frames the page asks for, counted before its own scripts run (they keep the function they find).
_COUNT_FRAMES = ("window.frames_asked = 0; const asked = window.requestAnimationFrame.bind(window); "
                 "window.requestAnimationFrame = (callback) => { window.frames_asked += 1; return asked(callback); };")
_COUNT_RUNS = "() => document.getElementById('ge-code-run').addEventListener('click', () => window.runs += 1)"


def _runs(page: Page) -> int:
    """Runs of the edit asked for (the run button clicked: by a pause, Ctrl+Enter or a person) since _COUNT_RUNS."""
    return page.evaluate("() => window.runs")


def _to_line(page: Page, number: int) -> None:
    """The cursor at the end of the editor's line `number` (the editor draws only the lines in view)."""
    page.locator(".cm-content").click()
    page.keyboard.press("Control+Home")
    for _ in range(number - 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("End")


def test_an_if_pasted_into_forward_shows_in_the_graph_and_a_typed_syntax_error_at_its_line(page: Page, app_url):
    loaded(page, app_url)
    page.get_by_role("tab", name="Code").click()
    built = page.get_by_text(re.compile(r"^Built and ran in the code worker: ([\d,]+) nodes"))
    expect(built).to_be_visible(timeout=TIMEOUT)
    before = int(re.search(r"([\d,]+) nodes", built.inner_text()).group(1).replace(",", ""))
    page.evaluate("() => { window.runs = 0; }")
    page.evaluate(_COUNT_RUNS)
    _to_line(page, LINE)
    # pasted, as a person pastes a few lines (typed, the editor would indent each line its own way)
    paste(page, "\n            if x.norm() > 1:  # a decision on the data: the cell once more"
                "\n                new = cell(x, new)")
    assert _runs(page) == 0  # not at once: a pause in the typing runs it
    page.wait_for_function("() => window.runs >= 1", timeout=TIMEOUT)
    expect(page.get_by_text(re.compile(r"Against the previous code: \+[1-9]"))).to_be_visible(timeout=TIMEOUT)
    after = int(re.search(r"([\d,]+) nodes", built.inner_text()).group(1).replace(",", ""))
    assert after > before
    expect(page.get_by_label("against the previous code, per module")).to_have_value(re.compile(r"layers\.0"))
    figure = page.locator(".js-plotly-plot").filter(visible=True).first
    expect(figure).to_contain_text("red outline")
    shot(page, "code-edit")
    # the pasted if, among the edit's branches: reached once per token, decided by the data
    page.get_by_text("Lines that ran, and which way each branch went, in the code on screen").click()
    pasted = page.get_by_role("row").filter(has_text=f"<editor>:{LINE + 1}").filter(has_text="if x.norm() > 1:")
    expect(pasted.filter(has_text="decided by data").first).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name=re.compile("^Compile the last edit that ran")).click()
    expect(page.locator("li", has_text=f"Data-dependent branching at the edited file, line {LINE + 1}")
           ).to_be_visible(timeout=TIMEOUT)  # dynamo breaks the graph at the pasted if
    page.get_by_label("bug").click()
    page.get_by_role("option", name=BUGS["shape"].title).click()
    page.get_by_role("button", name=re.compile("^Inject the bug")).click()  # the debugging lab, on this edit
    per_mode = page.get_by_label("per mode, on the edited model")
    for mode in EDIT_MODES:
        expect(per_mode.get_by_role("row", name=re.compile(rf"^{re.escape(mode)} "))).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile(rf"{BUGS['shape'].title}: eager names models/bugs\.py"))).to_be_visible()
    page.get_by_label("lengths (tokens): predicted from the edit's guards, then run").fill("5 3")
    page.get_by_role("button", name=re.compile("^Will they recompile")).click()  # the shapes lab, on this edit
    expect(page.get_by_text("2 of 2 requests did what their guards predicted")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_label("per length, on the edit").get_by_role("row", name=re.compile(r"^5 1 "))).to_be_visible()
    page.get_by_role("button", name=re.compile("^Where the time went")).click()  # the profiler, on this edit
    per_line = page.get_by_label("the edit's train step, per line")
    expect(per_line.get_by_role("row", name=re.compile(r"^<editor>:\d+ ")).first).to_be_visible(timeout=TIMEOUT)
    expect(figure).to_contain_text("coloured and sized by each node's profiled time")  # the edit's graph, by time
    href = page.get_by_role("link", name="link to this edit").get_attribute("href")
    assert href.startswith("?model=rnn&code=") and len(href) < 400  # a few changed lines, not the file
    _to_line(page, LINE + 2)  # back in the editor, at the end of the pasted call
    page.keyboard.type(" +")  # a dangling operator: the line is no longer Python
    broken = page.get_by_text(re.compile(rf"^Syntax error at line {LINE + 2}, column \d+"))
    expect(broken).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("The graph below is the last code that ran")).to_be_visible()
    expect(figure).to_contain_text(f"edited code: {after} nodes")  # the last good graph stays
    marked = page.locator("#ge-code-editor .ge-broken")  # the line, marked in the gutter and in the text
    expect(marked.first).to_be_visible()
    assert sorted(marked.all_inner_texts()) == sorted([str(LINE + 2), "                new = cell(x, new) +"])
    shot(page, "code-syntax-error")

    other = page.context.new_page()  # the link, opened by someone else: the Code tab, with the edit, built
    other.goto(app_url + href)
    expect(other.get_by_text(re.compile(rf"^Built and ran in the code worker: {after:,} nodes"))).to_be_visible(
        timeout=TIMEOUT)
    expect(other.get_by_role("tab", name="Code")).to_have_attribute("aria-selected", "true")


EXIT = next(i for i, line in enumerate((ROOT / "models" / "early_exit.py").read_text().splitlines(), 1)
            if line.strip() == "break")


def test_an_early_exit_edited_to_run_every_block_freezes_correctly_where_the_shipped_one_traced_wrong(
        page: Page, app_url):
    loaded(page, app_url + "?model=early_exit")
    page.get_by_role("tab", name="Code").click()
    expect(page.get_by_text(re.compile(r"^Built and ran in the code worker"))).to_be_visible(timeout=TIMEOUT)
    freeze = page.get_by_role("button", name=re.compile("^Freeze it by jit.trace"))
    routes = page.get_by_label("per route, on the edited model")
    freeze.click()  # as shipped: the trace keeps the one input's exit
    expect(routes.get_by_role("row", name=re.compile(r"^jit\.trace silently wrong"))).to_be_visible(timeout=TIMEOUT)
    _to_line(page, EXIT)
    for _ in range(len("break")):
        page.keyboard.press("Backspace")
    lines = page.locator(".cm-line").count()
    page.evaluate("() => { window.runs = 0; }")
    page.evaluate(_COUNT_RUNS)
    page.keyboard.type("pass")  # every block runs, whatever the confidence
    asked = _runs(page)  # (0, unless the typing itself paused)
    page.keyboard.press("Control+Enter")
    assert _runs(page) == asked + 1  # at once, not after a pause
    assert page.locator(".cm-line").count() == lines  # the editor's own Ctrl+Enter (a new line) did not run
    expect(page.get_by_text(re.compile(r"Against the previous code: \+[1-9]"))).to_be_visible(timeout=TIMEOUT)
    freeze.click()
    expect(routes.get_by_role("row", name=re.compile(r"^jit\.trace works"))).to_be_visible(timeout=TIMEOUT)
    shot(page, "code-freeze")


EMBED = next(i for i, line in enumerate((ROOT / "models" / "rnn.py").read_text().splitlines(), 1)
             if line.strip() == "x = self.embed(ids)")


def _line_text(page: Page) -> str:
    """The text of the editor's line the cursor is on."""
    return page.evaluate("() => { const n = window.getSelection().anchorNode;"
                         " return (n.nodeType === 1 ? n : n.parentElement).closest('.cm-line').textContent; }")


def test_enter_keeps_the_indentation_and_undo_goes_back_to_the_last_edit_that_ran(page: Page, app_url):
    """Enter after an indented line starts the next at its indentation (four more after a colon), so the first
    natural edit runs; after a good edit and then a broken one, Undo brings back the good one, not the original."""
    loaded(page, app_url)
    page.get_by_role("tab", name="Code").click()
    built = page.get_by_text(re.compile(r"^Built and ran in the code worker: ([\d,]+) nodes"))
    expect(built).to_be_visible(timeout=TIMEOUT)
    _to_line(page, EMBED)
    page.keyboard.press("Enter")
    page.keyboard.type("x = x * 2")
    assert _line_text(page) == "        x = x * 2"  # the 8 spaces of `x = self.embed(ids)`
    page.keyboard.press("Control+Enter")  # runs: a good edit
    expect(page.get_by_text(re.compile(r"Against the previous code: "))).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("Enter")
    page.keyboard.type("if x.sum() > 0:")
    page.keyboard.press("Enter")
    page.keyboard.type("x = x +")  # broken
    assert _line_text(page) == "            x = x +"  # four more after the colon
    expect(page.get_by_text(re.compile(r"^Syntax error at line"))).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Undo the last edit that ran").click()
    editor = page.locator(".cm-content")
    expect(editor).not_to_contain_text("x = x +", timeout=TIMEOUT)  # the broken edit gone
    expect(editor).to_contain_text("x = self.embed(ids)        x = x * 2")  # the good edit, not the original
