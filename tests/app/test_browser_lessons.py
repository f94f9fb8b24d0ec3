"""The lessons as a class sees them at a projector: presentation mode at 1280x720, every step on a server that
restarted with every claim measured within the hour (the board's file: the quick experiments, measured once per
test run), so each step's card is checked without minutes of re-measuring; two steps are measured again live."""

import re
import shutil

import pytest
from playwright.sync_api import Page, expect

from bench import lesson_status
from explorer.claims.lessons import STEPS
from explorer.ui.theme import STATE_LINK_ID
from tests.app.browser import (
    TIMEOUT,
    lines_over_lines,
    overlaps,
    plot_texts,
    shot,
    shown_after,
    text_lines,
    type_in,
    watch_for,
)
from tests.helpers import start_app, stop_app

pytestmark = [pytest.mark.slow, pytest.mark.owns_app]  # a claims board restored by a restarted app
SCREEN_H = 720
MEASURE_AGAIN = (4,)  # re-measured in the browser: seconds here (most of the others take minutes, cold)
STATUS = re.compile(r"\(\d+ s; the last one took [\d.]+ s on this server\)")


@pytest.fixture(scope="module")
def restarted_url(measured_claims, tmp_path_factory):
    kept = tmp_path_factory.mktemp("board") / "claims.json"
    shutil.copy(measured_claims, kept)  # this app writes its own measurements there
    proc, url, _ = start_app({"GE_CLAIMS_FILE": str(kept), "GE_QUICK_CLAIMS": "1"})  # a quick board, said so
    yield url
    stop_app(proc)


PROJECTED_PX = 28  # the step's words, the verdict and the cards' values, projected (a slide's ~24 pt minimum)


def _on_first_screen(page: Page, number: int) -> None:
    """Projected: the step's claim header with its Playground link, the verdict in one line, every figure of its card
    (label, value, detail line) and every word its Do and Notice ask the room to read (in a card or the chart) above
    the screen's bottom edge; the step's words, the verdict and the values in large type; no line of text over
    another."""
    link = page.get_by_role("link", name="reproduce it in the Playground").filter(visible=True)
    if link.count():  # a claim reproduced in the Playground
        box = link.first.bounding_box()
        assert box and box["y"] + box["height"] <= SCREEN_H, (number, box)
    verdict = page.locator(".ge-verdict-head p").filter(visible=True)
    expect(verdict).to_have_count(1)
    box = verdict.bounding_box()
    assert box and box["y"] + box["height"] <= SCREEN_H and box["height"] < 1.5 * 30 * 1.2, (number, box)  # one line
    cards = page.locator(".card").filter(visible=True)
    assert cards.count() >= 1, number
    for i in range(cards.count()):
        box = cards.nth(i).bounding_box()
        assert box and box["y"] + box["height"] <= SCREEN_H, (number, cards.nth(i).inner_text(), box)
        expect(cards.nth(i).locator(".detail")).to_be_visible()
    for words in STEPS[number - 1].reads:
        found = page.locator(".card, .js-plotly-plot svg text").filter(has_text=words).filter(visible=True)
        boxes = [found.nth(i).bounding_box() for i in range(found.count())]
        assert [b for b in boxes if b and b["y"] + b["height"] <= SCREEN_H], (number, words, boxes)
    sizes = page.locator(".ge-step p, .ge-verdict-head p, .card .value").filter(visible=True).evaluate_all(
        "els => els.map(e => [e.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(e).fontSize)])")
    assert len(sizes) >= 3 and not [s for s in sizes if s[1] < PROJECTED_PX], (number, sizes)
    crossing = lines_over_lines(text_lines(page, page.locator(".ge-lesson")))
    assert not crossing, (number, crossing)


def _chart_readable(page: Page, number: int) -> None:
    """The step's chart: every text at the body's size or more (12 px), no two overlapping."""
    chart = page.locator(".js-plotly-plot").filter(visible=True)
    expect(chart).to_have_count(1)  # drawn after the card's text, on a busy machine a moment later
    texts = plot_texts(page, chart.first)
    assert texts and not [t for t in texts if t["size"] < 12], (number, texts)
    assert not overlaps(texts), (number, overlaps(texts))


def test_a_class_follows_every_lesson_step_at_a_projector(page: Page, restarted_url):
    page.goto(restarted_url + "?lesson=3")  # a teacher's link to a step; back to the first from there
    expect(page.get_by_text(f"Step 3 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("“Changing the architecture needs no rebuild of the whole model.”")).to_be_visible()
    expect(page.get_by_text(re.compile(r"last took .* on this server"))).to_be_visible()  # presentation off
    for _ in range(2):
        page.get_by_role("button", name="← previous").click()
    expect(page.get_by_text(f"Step 1 of {len(STEPS)}")).to_be_visible()
    page.get_by_label("presentation mode").check()
    for number in range(1, len(STEPS) + 1):
        page.evaluate("window.scrollTo(0, 0)")
        expect(page.get_by_text(f"Step {number} of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
        # the board's result, restored after the restart, is on the card before anyone presses a button
        expect(page.get_by_text(re.compile(r"^(Holds|Does not hold|Not resolved)")).filter(visible=True).first
               ).to_be_visible(timeout=TIMEOUT)
        # how long it took here is the teacher's line, with what to notice: off the projected step
        expect(page.get_by_text(re.compile(r"last took .* on this server"))).to_be_hidden()
        if number in MEASURE_AGAIN:
            # a warm run can end within the second expect() polls in: the page records when the status showed
            watch_for(page, STATUS)
            page.get_by_role("button", name="Measure again").filter(visible=True).first.click()
            # what it is doing, the seconds, and how long it took last time here (how soon after the click:
            # bench/lesson_status.py, below)
            shown_after(page)
            expect(page.get_by_text(STATUS).filter(visible=True)).to_have_count(0, timeout=TIMEOUT)
            # a quick board (GE_QUICK_CLAIMS) says so first, then when it measured
            expect(page.get_by_text(re.compile(r"^Quick mode \(a reduced experiment for tests, not this claim's "
                                               r"evidence\)\. Measured on this server at")).filter(visible=True)
                   ).to_be_visible()
            page.evaluate("window.scrollTo(0, 0)")
        _on_first_screen(page, number)
        _chart_readable(page, number)
        shot(page, f"lesson-{number}-presented")
        if number < len(STEPS):
            page.get_by_role("button", name="next →").click()
    page.get_by_role("tab", name="Claims").click()  # the same board: the Claims tab shows the results too
    expect(page.get_by_text(re.compile(r"^Holds: the RNN's graph grows")).first).to_be_visible(timeout=TIMEOUT)


def test_the_lessons_tab_opened_by_a_click_shows_the_board_as_it_is_now(page: Page, restarted_url):
    """The page is built before the board is read: the tab, clicked, shows step 1 with the result this server has
    (the board restored at start-up), not "not run yet" until a link or a button is used."""
    page.goto(restarted_url)
    page.get_by_role("tab", name="Lessons").click()
    expect(page.get_by_text(f"Step 1 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Its experiment last took")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Its experiment has not run on this server yet")).to_have_count(0)


def test_a_clickers_keys_move_the_step_and_a_reload_keeps_it_projected(page: Page, restarted_url):
    page.goto(restarted_url + "?lesson=2&present=1")
    expect(page.get_by_text(f"Step 2 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("body.ge-presentation")).to_have_count(1)  # projected from the link
    expect(page.get_by_text("This link could not be restored")).to_have_count(0)  # a step's link is no bad one
    # ready for class: the board restored after the restart, every step with a result, and until when
    expect(page.get_by_text(re.compile(rf"^{len(STEPS)} of {len(STEPS)} steps measured on this server, ready until "
                                       r"\d\d:\d\d UTC"))
           ).to_be_visible()
    page.locator("body").click(position={"x": 5, "y": 5})  # the page has the focus, as after a click on a slide
    page.keyboard.press("PageDown")  # what a presenter's clicker sends
    expect(page.get_by_text(f"Step 3 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("ArrowRight")
    expect(page.get_by_text(f"Step 4 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("PageUp")
    expect(page.get_by_text(f"Step 3 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    page.wait_for_function("() => new URL(location.href).searchParams.get('lesson') === '3'", timeout=TIMEOUT)
    assert "present=1" in page.url
    header = page.locator(f"#{STATE_LINK_ID} a")  # the header's link is the step's here; the Playground takes it back
    expect(header).to_have_attribute("href", "?lesson=3", timeout=TIMEOUT)
    page.get_by_role("tab", name="Playground").click()
    expect(header).to_have_attribute("href", re.compile(r"^\?model="), timeout=TIMEOUT)
    page.get_by_role("tab", name="Lessons").click()
    expect(header).to_have_attribute("href", "?lesson=3", timeout=TIMEOUT)
    page.reload()
    expect(page.get_by_text(f"Step 3 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("body.ge-presentation")).to_have_count(1)
    page.get_by_label("presentation mode").uncheck()  # and out of the address
    page.wait_for_function("() => !new URL(location.href).searchParams.has('present')", timeout=TIMEOUT)


def test_the_status_script_measures_in_a_real_browser_and_writes_its_results(page: Page, restarted_url, tmp_path):
    """bench/lesson_status.py's quick run, in this module's browser on its quick board's app."""
    rows = lesson_status.measure(page, restarted_url, quick=True)
    assert len(rows) == 1 and re.match(r"\| 4 \| \d+ \| \d+-\d+ \| [01] of 1 \| 1 \|$", rows[0]), rows
    out = tmp_path / "results.md"
    out.write_text(lesson_status.results(rows, quick=True))
    assert "python -m bench.lesson_status --quick" in out.read_text() and rows[0] in out.read_text()


def test_a_room_asks_three_students_then_the_teacher_reveals_on_every_page(page: Page, browser, browser_context_args,
                                                                            restarted_url):
    """A teacher opens a room on step 1; three students join by its code, each in a browser of their own, and answer
    the step's prediction before any evidence shows; the teacher reveals: every page shows the room's answers beside
    the measured one, and the card; the teacher's next step carries the students along, evidence folded again; a
    student's page has no experiment to re-run; reloads keep the teacher the teacher and a student their answer."""
    page.goto(restarted_url + "?lesson=1")
    expect(page.get_by_text(f"Step 1 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name=re.compile("^Open a room for this class")).click()
    code = page.locator(".ge-room-code")
    expect(code).to_have_text(re.compile(r"^[A-Z2-9]{5}$"), timeout=TIMEOUT)
    room = code.inner_text()
    expect(page.get_by_text(f"Join at http://127.0.0.1:{restarted_url.rsplit(':', 1)[1].strip('/')}/?room={room}")
           ).to_be_visible()
    expect(page.get_by_text(re.compile(r"^This server listens on 127\.0\.0\.1 only"))).to_be_visible()
    expect(page.locator(".ge-room-join svg")).to_have_count(1)  # the QR code
    expect(page.locator(".card").filter(visible=True)).to_have_count(0)  # the question comes before the evidence
    # the teacher's experiment buttons are the room's (first in line on the board), the card's own are hidden
    expect(page.get_by_role("button", name=re.compile(r"^Run this step's experiment \(ahead"))).to_be_visible()
    expect(page.get_by_role("button", name="Measure it again")).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("^(Run the experiment|Measure again)$")).filter(
        visible=True)).to_have_count(0)
    students = []
    for answer in ("8", "10", "12"):
        context = browser.new_context(**browser_context_args)  # a browser of their own: no shared storage
        student = context.new_page()
        student.goto(f"{restarted_url}?room={room.lower()}")  # typed as read off the board
        expect(student.get_by_text(f"Room {room} (student)")).to_be_visible(timeout=TIMEOUT)
        expect(student.get_by_text(f"Step 1 of {len(STEPS)}")).to_be_visible()
        expect(student.get_by_role("button", name=re.compile("Run the experiment|Measure again|Run this step|"
                                                                    "Measure it again")).filter(visible=True)
               ).to_have_count(0)
        expect(student.locator(".card").filter(visible=True)).to_have_count(0)
        student.get_by_label("your prediction (a number)").fill(answer)
        student.get_by_role("button", name="Send my prediction").click()
        expect(student.get_by_text(f"Your answer: {answer} x")).to_be_visible(timeout=TIMEOUT)
        students.append(student)
    expect(page.get_by_text("3 joined · 3 answered")).to_be_visible(timeout=TIMEOUT)  # the teacher's page's tick
    # step 1's Do: a student types a sentence of their own in the Playground (the page's first text is nobody's)
    students[0].get_by_role("tab", name="Playground").click()
    expect(students[0].locator(".card").first).to_be_visible(timeout=TIMEOUT)
    type_in(students[0], "My own sentence, typed in class.")
    expect(students[0].locator(".card .value").first).to_have_text("32", timeout=TIMEOUT)
    students[0].get_by_role("tab", name="Lessons").click()
    page.get_by_role("button", name="Reveal the answers and the evidence").click()
    for p in (page, *students):
        expect(p.get_by_text(re.compile(r"^Measured on this server: [\d.]+ x$"))).to_be_visible(timeout=TIMEOUT)
        expect(p.get_by_text(re.compile(r"The room's 3 answers \(median 10\)"))).to_be_visible()
        expect(p.get_by_text(re.compile(r"^The room's own inputs: 1 run$"))).to_be_visible()  # the runs' plot
        expect(p.locator(".card").filter(visible=True).first).to_be_visible()  # the evidence, unfolded
    shot(students[0], "room-student-revealed")
    # projected with the room open: its code under the step, the step's verdict and cards still on the first screen
    page.get_by_label("presentation mode").check()
    expect(page.locator("body.ge-presentation")).to_have_count(1)
    page.evaluate("window.scrollTo(0, 0)")
    box = page.locator(".ge-room-code").bounding_box()
    assert box and box["y"] + box["height"] <= SCREEN_H, box
    _on_first_screen(page, 1)
    sizes = page.locator(".ge-room button").filter(visible=True).evaluate_all(
        "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
    assert len(sizes) >= 2 and min(sizes) >= 20, sizes  # the teacher's buttons, pressed in front of the room
    shot(page, "room-teacher-presented")
    page.get_by_label("presentation mode").uncheck()
    page.get_by_role("button", name="next →").click()
    for p in students:  # each follows the teacher's step, the evidence folded for the next prediction
        expect(p.get_by_text(f"Step 2 of {len(STEPS)}")).to_be_visible(timeout=TIMEOUT)
        expect(p.locator(".card").filter(visible=True)).to_have_count(0)
    students[1].get_by_label("your prediction (a number)").fill("1")
    students[1].get_by_role("button", name="Send my prediction").click()
    expect(students[1].get_by_text("Your answer: 1 models")).to_be_visible(timeout=TIMEOUT)
    students[1].reload()  # the same student: the browser kept its token
    expect(students[1].get_by_text("Your answer: 1 models")).to_be_visible(timeout=TIMEOUT)
    expect(students[1].get_by_text(re.compile(r"3 joined · 1 answered"))).to_be_visible()
    assert "teacher" not in page.url and f"room={room}" in page.url  # the projected address holds no token
    page.reload()  # the teacher's browser kept the token: still the teacher, at the room's step
    expect(page.get_by_text(f"Room {room} (teacher)")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(f"Step 2 of {len(STEPS)}")).to_be_visible()
    page.get_by_role("button", name="Download the room's answers (CSV)").click()
    expect(page.get_by_text(re.compile(rf"room-{room}-answers"))).to_be_visible(timeout=TIMEOUT)  # (.csv apart)
    shot(page, "room-teacher")
    for p in students:
        p.context.close()
