"""Real-browser scenarios: headless Debian Chromium driven by Playwright against the real app.

Every scenario leaves a screenshot under test-artifacts/ (git-ignored)."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.helpers import ARGS, ensure_axe, ensure_chromium, start_app, stop_app

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TIMEOUT = 90_000  # ms: a compile or a lab run on a busy 2-core machine


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": ensure_chromium(), "args": ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 720}}  # a projector


@pytest.fixture(scope="module")
def app_url():
    proc, url, _ = start_app()
    yield url
    stop_app(proc)


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _card(page: Page, label: str) -> str:
    """The value shown on the metric card with this label."""
    return page.locator(".card", has=page.locator(".label", has_text=re.compile(f"^{label}$"))).locator(
        ".value").inner_text()


def _nodes(page: Page) -> int:
    return int(_card(page, "graph nodes").replace(",", ""))


def _loaded(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator(".card").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("(cpu, core").first).to_be_visible(timeout=TIMEOUT)


INPUT = "input (each UTF-8 byte is one token)"


def _type(page: Page, text: str) -> None:
    """Replace the input's text (every settled change runs it: no key press, no button)."""
    page.get_by_label(INPUT).fill(text)


def test_page_loads_with_graph_cards_and_limits(page: Page, app_url):
    _loaded(page, app_url)
    assert _nodes(page) > 0 and _card(page, "tokens") == "42"
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    page.get_by_text("Limits of this server").click()
    expect(page.get_by_text("GE_MAX_TOKENS")).to_be_visible()
    _shot(page, "01-loaded")


def test_a_longer_sentence_grows_the_graph_and_updates_the_cards(page: Page, app_url):
    _loaded(page, app_url)
    before = _nodes(page)
    text = "A much longer sentence than the first one, so the unrolled loop runs many more steps. " * 2
    _type(page, text)
    expect(page.locator(".card .value").first).to_have_text(str(len(text)), timeout=TIMEOUT)
    assert _nodes(page) > 3 * before
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"42 tokens\) -> this input \(\d+ tokens"))
    _shot(page, "02-longer-input")


def test_an_architecture_control_rebuilds_the_model_and_the_graph(page: Page, app_url):
    _loaded(page, app_url)
    before = _nodes(page)
    page.get_by_label("bidirectional").check()
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"architecture change \(bidirectional "
                                                               r"False->True\)"), timeout=TIMEOUT)
    assert _nodes(page) > before
    _shot(page, "03-architecture")


def _short_input(page: Page) -> None:
    """A 9-token input: what a compile or an export of the unrolled RNN costs grows with the unroll."""
    _type(page, "Hi there.")
    expect(page.locator(".card .value").first).to_have_text("9", timeout=TIMEOUT)


def test_compiling_shows_progress_then_the_compiled_numbers(page: Page, app_url):
    _loaded(page, app_url)
    _short_input(page)
    page.get_by_role("radio", name="aot_eager").check()
    page.get_by_label("compile", exact=True).check()
    expect(page.get_by_text(re.compile(r"Compiling \(aot_eager"))).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Compiled with aot_eager")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(".card .label", has_text="speed-up vs eager")).to_be_visible()
    _shot(page, "04-compiled")


def test_an_emptied_box_says_so_without_error_marks_and_the_page_keeps_working(page: Page, app_url):
    _loaded(page, app_url)
    _type(page, "")
    expect(page.get_by_text(re.compile("The input is empty"))).to_be_visible(timeout=TIMEOUT)
    page.wait_for_timeout(500)  # an error toast or badge would be drawn by now
    expect(page.locator(".toast-body")).to_have_count(0)
    expect(page.get_by_text("Error", exact=True)).to_have_count(0)  # Gradio's red badges over every output
    assert _card(page, "tokens") == "42"  # the previous run's figures stay
    _shot(page, "05-bad-input")
    _type(page, "Back to work.")
    expect(page.locator(".card .value").first).to_have_text("13", timeout=TIMEOUT)


def test_the_batching_lab_runs(page: Page, app_url):
    _loaded(page, app_url)
    page.get_by_role("tab", name="Batching lab").click()
    page.get_by_role("button", name="Run the lab").click()
    expect(page.get_by_text("Fastest correct forward").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("per-sample loop").first).to_be_visible()
    _shot(page, "06-batching-lab")


def test_a_state_link_restores_model_config_text_and_presentation(page: Page, app_url):
    _loaded(page, app_url + "?model=transformer&text=Hand+this+out&layers=3&heads=2")
    expect(page.locator(".card .value").first).to_have_text("13", timeout=TIMEOUT)
    expect(page.get_by_label(INPUT)).to_have_value("Hand this out")
    expect(page.get_by_role("spinbutton", name="layers").first).to_have_value("3")
    href = page.get_by_role("link", name="link to this state").get_attribute("href")
    assert "model=transformer" in href and "layers=3" in href and "heads=2" in href
    page.get_by_label("presentation mode").check()
    expect(page.locator("body.ge-presentation")).to_have_count(1)
    _shot(page, "07-state-link-presentation")


def test_the_session_downloads_as_csv_and_html(page: Page, app_url):
    _loaded(page, app_url)
    page.get_by_text("Download this session").click()
    page.get_by_role("button", name="Prepare CSV and HTML report").click()
    expect(page.get_by_text(re.compile(r"graph-explorer-.*\.html"))).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile(r"graph-explorer-.*\.csv"))).to_be_visible()
    _shot(page, "08-downloads")


PARAGRAPH = ("Define-by-run means the graph is built while the program runs: a loop over the tokens leaves one "
             "copy of its body per token, and an if leaves only the branch it took.")


def test_a_pasted_paragraph_and_a_deleted_selection_run_without_another_key(page: Page, app_url, context):
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    _loaded(page, app_url)
    page.evaluate("text => navigator.clipboard.writeText(text)", PARAGRAPH)
    box = page.get_by_label(INPUT)
    box.click()
    box.press("Control+A")
    box.press("Control+V")  # a paste fires no key event the old `.input` wiring listened to
    expect(page.locator(".card .value").first).to_have_text(str(len(PARAGRAPH.encode())), timeout=TIMEOUT)
    box.press("Control+A")
    box.press("Delete")
    expect(page.get_by_text(re.compile("The input is empty")).first).to_be_visible(timeout=TIMEOUT)
    _shot(page, "09-paste-and-delete")


def test_typing_a_number_into_a_slider_box_runs_the_settled_value_only(page: Page, app_url):
    _loaded(page, app_url)
    box = page.get_by_role("spinbutton", name="hidden").first
    box.click()
    box.press("Control+A")
    box.press_sequentially("256", delay=100)  # the prefixes 2 and 25 must not run
    box.press("Enter")
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"architecture change \(hidden 64->256\)"),
                                                               timeout=TIMEOUT)


def test_picking_a_model_with_the_mouse_runs_it_once(page: Page, app_url):
    _loaded(page, app_url)
    page.get_by_label("model", exact=True).click()
    page.get_by_role("option", name="Transformer encoder").click()
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"previous model \(rnn\) -> transformer"),
                                                               timeout=TIMEOUT)
    page.wait_for_timeout(1500)  # a second run would now replace the diff with "the same graph"
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"previous model \(rnn\) -> transformer"))


def test_a_bad_state_link_says_so_and_opens_the_defaults(page: Page, app_url):
    _loaded(page, app_url + "?model=nope")
    expect(page.get_by_text(re.compile("This link could not be restored")).first).to_be_visible(timeout=TIMEOUT)
    assert _card(page, "tokens") == "42"


def test_a_number_past_a_slider_bound_runs_clamped_and_the_box_agrees_with_the_graph(page: Page, app_url):
    _loaded(page, app_url)
    box = page.get_by_role("spinbutton", name="layers").first
    top = box.get_attribute("max")
    box.click()
    box.press("Control+A")
    box.press_sequentially("99")
    box.press("Tab")  # leaving the box settles it; Gradio alone would refuse 99 and show the clamped max
    diff = page.get_by_label("diff", exact=True)
    expect(diff).to_have_value(re.compile(rf"architecture change \(layers 1->{top}\)"), timeout=TIMEOUT)
    expect(box).to_have_value(top)
    nodes = _nodes(page)
    box.click()
    box.press("Control+A")
    box.press_sequentially("abc")  # not a number: the box keeps the value of the run on screen
    box.press("Tab")
    expect(box).to_have_value(top)
    expect(page.locator(".toast-body")).to_have_count(0)
    assert _nodes(page) == nodes


def test_the_deployment_lab_freezes_the_playgrounds_model(page: Page, app_url):
    _loaded(page, app_url)
    _short_input(page)
    page.get_by_role("tab", name="Deployment lab").click()
    for slow in ("export (Dim.AUTO)", "onnx", "aoti"):
        page.get_by_label(slow, exact=True).uncheck()
    page.get_by_role("button", name="Freeze the current model").click()
    # the rnn's trace refuses other lengths: a loud failure in the table once the routes have run
    expect(page.get_by_role("gridcell", name="fails loudly").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile("^Verdict: No route freezes this model as written"))).to_be_visible()
    _shot(page, "10-deployment-lab")
    artefact = page.get_by_text(re.compile(r"traced\.pt")).filter(visible=True)
    expect(artefact.first).to_be_visible()  # offered for download


def test_the_debugging_lab_shows_the_bug_in_each_mode(page: Page, app_url):
    _loaded(page, app_url)
    page.get_by_role("tab", name="Debugging lab").click()
    page.get_by_role("button", name="Run the bug").click()
    expect(page.get_by_role("gridcell", name="TorchRuntimeError", exact=False).first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile("^Verdict: shape bug on long inputs: eager names models/bugs.py"))
           ).to_be_visible()
    _shot(page, "11-debugging-lab")


def test_the_multi_process_lab_runs_a_scenario_on_the_playgrounds_model(page: Page, app_url):
    _loaded(page, app_url)  # the Playground's rnn: a model the stragglers scenario takes
    page.get_by_role("tab", name="Multi-process lab").click()
    page.get_by_role("radio", name="Stragglers from variable lengths").check()
    page.get_by_role("button", name="Run the scenario").click()
    expect(page.get_by_text(re.compile("^Verdict: Round-robin sharding: median step"))).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile("Model: the Playground's rnn and its architecture"))).to_be_visible()
    expect(page.get_by_role("listitem").filter(has_text="rank 0 finished 14 steps; rank 1 finished 14 steps")
           ).to_be_visible()  # how each rank ended
    expect(page.get_by_role("gridcell", name="equal tokens: step (slowest rank)")).to_be_visible()
    expect(page.locator(".js-plotly-plot").filter(visible=True).first).to_be_visible()  # the timeline
    _shot(page, "12-multi-process-lab")


def test_a_claim_card_runs_its_experiment_and_a_lesson_step_shows_it(page: Page, app_url):
    _loaded(page, app_url)
    page.get_by_role("tab", name="Claims").click()
    first = page.locator(".gradio-container").get_by_text("1. “The architecture can change at run time")
    expect(first).to_be_visible()
    page.get_by_role("button", name="Run the experiment").first.click()
    expect(page.get_by_text(re.compile(r"^Holds: the RNN's graph grows")).first).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(".card .label", has_text="RNN graph").first).to_be_visible()
    _shot(page, "claims-card")
    # A teacher's link to step 3; back to step 1, whose card shows the result measured above (the server's board).
    page.goto(app_url + "?lesson=3")
    expect(page.get_by_text("Step 3 of 8")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("“Changing the architecture needs no rebuild of the whole model.”")).to_be_visible()
    page.get_by_role("button", name="next →").click()
    expect(page.get_by_text("Step 4 of 8")).to_be_visible()
    for _ in range(3):
        page.get_by_role("button", name="← previous").click()
    expect(page.get_by_text("Step 1 of 8")).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Holds: the RNN's graph grows")).first).to_be_visible()
    _shot(page, "lesson-step")


_NODE_POINTS = """(gd) => {
  const L = gd._fullLayout, out = [];
  gd._fullData.forEach((t) => {
    if (!String(t.mode).includes('markers') || !t.text) return;
    for (let i = 0; i < t.x.length; i++) {
      out.push({text: String(t.text[i]).split('<br>')[0].replace(/<[^>]+>/g, ''),
                x: L.xaxis.l2p(t.x[i]) + L._size.l, y: L.yaxis.l2p(t.y[i]) + L._size.t});
    }
  });
  const r = gd.getBoundingClientRect();
  const apart = out.filter((p) => out.every((q) => q === p || Math.hypot(p.x - q.x, p.y - q.y) > 24));
  return {left: r.left, top: r.top, width: r.width, svg: gd.querySelector('.main-svg').getBoundingClientRect().width,
          points: apart.slice(0, 8)};
}"""


def _hover_known_nodes(page: Page) -> int:
    """Hover nodes at the pixels Plotly placed them; each tooltip must name that node. Returns how many."""
    graph = page.locator(".js-plotly-plot").first
    graph.scroll_into_view_if_needed()
    info = graph.evaluate(_NODE_POINTS)
    assert info["svg"] <= info["width"] + 1  # the figure fits its box: nothing cut off on the right
    for p in info["points"]:
        page.mouse.move(info["left"] + p["x"], info["top"] + p["y"])
        expect(page.locator(".hoverlayer .hovertext").first).to_contain_text(p["text"], timeout=5_000)
    return len(info["points"])


def test_hover_names_the_node_under_the_pointer_in_both_modes(page: Page, app_url):
    _loaded(page, app_url)
    assert _hover_known_nodes(page) >= 4
    page.get_by_label("presentation mode").check()
    page.wait_for_timeout(1000)  # the figures re-fit to their new width
    assert _hover_known_nodes(page) >= 4
    _shot(page, "presentation-hover")


_AXE = """async () => (await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})).violations
  .filter((v) => v.impact === 'serious' || v.impact === 'critical')
  .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.html.slice(0, 100)).join(' | ')}`)"""
TABS = ["Playground", "Batching lab", "Deployment lab", "Debugging lab", "Multi-process lab", "Claims", "Lessons"]


def test_no_serious_or_critical_wcag_violation_on_any_tab(page: Page, app_url):
    _loaded(page, app_url)  # the Playground with a run on screen: graph, cards, history, raw numbers
    page.add_script_tag(path=str(ensure_axe()))
    found = {}
    for tab in TABS:
        page.get_by_role("tab", name=tab).click()
        if tab == "Claims":  # a card with its figure, numbers and verdict
            page.get_by_role("button", name="Run the experiment").first.click()
            expect(page.get_by_text(re.compile(r"^Holds: the RNN's graph grows")).first).to_be_visible(timeout=TIMEOUT)
        # Settled: an output Gradio is still updating is drawn faded (a transient contrast failure, not ours)
        page.wait_for_function("!document.querySelector('.generating')", timeout=TIMEOUT)
        page.wait_for_timeout(1500)
        found[tab] = page.evaluate(_AXE)
    assert found == {tab: [] for tab in TABS}


_FOCUSABLE = """() => [...document.querySelectorAll('input, button, select, textarea, a[href], [tabindex]')]
  .filter((e) => e.tabIndex >= 0 && !e.disabled && e.offsetParent !== null && e.getClientRects().length)
  .map((e, i) => { e.dataset.geFocus = String(i); return i; })"""
_NAME = """() => { const e = document.activeElement; if (!e || !e.dataset.geFocus) return null;
  const byId = e.id && document.querySelector(`label[for="${e.id}"]`);
  const block = e.closest('.block')?.querySelector('[data-testid="block-info"]');
  const name = e.getAttribute('aria-label') || e.labels?.[0]?.innerText || (byId && byId.innerText) || e.title
    || e.innerText || e.dataset.title || e.querySelector('title')?.textContent || e.closest('label')?.innerText
    || block?.innerText;
  return [e.dataset.geFocus, (name || '').trim()]; }"""


def test_every_playground_control_is_reached_and_named_with_the_keyboard(page: Page, app_url):
    _loaded(page, app_url)
    controls = set(page.evaluate(_FOCUSABLE))
    page.locator("body").click(position={"x": 5, "y": 5})
    reached: dict[int, str] = {}
    for _ in range(3 * len(controls)):
        page.keyboard.press("Tab")
        got = page.evaluate(_NAME)
        if got is not None:
            reached[int(got[0])] = got[1]
        if controls <= set(reached):
            break
    assert controls <= set(reached), f"not reachable with Tab: {sorted(controls - set(reached))}"
    unnamed = [i for i, name in reached.items() if not name]
    assert not unnamed, f"{len(unnamed)} controls without a name"


def test_a_collapsed_module_opens_from_the_menu_under_the_graph(page: Page, app_url):
    _loaded(page, app_url)  # the RNN on 42 tokens: 686 nodes, drawn collapsed per call
    title = page.locator(".js-plotly-plot .gtitle").first
    expect(title).to_contain_text("collapsed per call")
    expect(page.locator(".js-plotly-plot .legendtext").first).to_contain_text("42 steps")
    menu = page.get_by_label("open a module")
    menu.click()
    page.get_by_role("option", name=re.compile(r"^layers\.0\.fwd \(")).click()
    expect(title).to_contain_text("layers.0.fwd opened", timeout=TIMEOUT)
    expect(title).to_contain_text("686 nodes")  # the counts are the whole graph's, opened or not
    _shot(page, "graph-opened")
