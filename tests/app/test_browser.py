"""Real-browser scenarios of the Playground: headless Debian Chromium driven by Playwright against the real app
(fixtures in conftest.py, shared steps in browser.py)."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.app.browser import (
    INPUT,
    TIMEOUT,
    broken_words,
    card,
    loaded,
    loaded_short,
    nodes,
    opened,
    overlaps,
    plot_texts,
    shot,
    shown_after,
    type_in,
    watch_for,
)

pytestmark = pytest.mark.slow


def test_page_loads_with_graph_cards_and_limits(page: Page, app_url):
    loaded(page, app_url)
    assert nodes(page) > 0 and card(page, "tokens") == "42"
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    page.get_by_text("Limits of this server").click()
    expect(page.get_by_text("GE_MAX_TOKENS")).to_be_visible()
    shot(page, "01-loaded")


def test_a_longer_sentence_grows_the_graph_and_updates_the_cards(page: Page, app_url):
    loaded(page, app_url)
    before = nodes(page)
    text = "A much longer sentence than the first one, so the unrolled loop runs many more steps. " * 2
    type_in(page, text)
    expect(page.locator(".card .value").first).to_have_text(str(len(text)), timeout=TIMEOUT)
    assert nodes(page) > 3 * before
    # the diff comes with the timings; against the page's own text, however soon after it the edit was typed
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"42 tokens\) -> this input \(\d+ tokens"),
                                                               timeout=TIMEOUT)
    shot(page, "02-longer-input")


def test_an_architecture_control_rebuilds_the_model_and_the_graph(page: Page, app_url):
    loaded(page, app_url)
    before = nodes(page)
    page.get_by_label("bidirectional").check()
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"architecture change \(bidirectional "
                                                               r"False->True\)"), timeout=TIMEOUT)
    assert nodes(page) > before
    shot(page, "03-architecture")


def test_compiling_shows_progress_then_the_compiled_numbers(page: Page, app_url):
    loaded_short(page, app_url)
    page.get_by_role("radio", name="aot_eager").check()
    watch_for(page, re.compile(r"Compiling \(aot_eager"))  # (a forked worker may compile this in under a second)
    page.get_by_label("compile", exact=True).check()
    shown_after(page)
    expect(page.get_by_text("Compiled with aot_eager")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(".card .label", has_text="speed-up vs eager")).to_be_visible()
    shot(page, "04-compiled")
    # where the compiled time went: inductor's kernels, each with the FX nodes it computes (a compile of its own)
    page.get_by_text("Where the compiled time went: inductor's kernels").click()
    page.get_by_role("button", name="Profile the compiled kernels").click()
    said = page.get_by_text(re.compile(r"compiled afresh with inductor and profiled 20 times: \d+ kernels"))
    expect(said).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("row").filter(has_text="cpp_fused_").first).to_be_visible()
    kernels = page.locator(".block").filter(has=page.get_by_test_id("block-label").filter(
        has_text="the captured graph coloured by each node's share"))
    expect(kernels.locator(".colorbar")).to_have_count(1)
    # what it takes away: a Perfetto trace of the run, and tlparse's report with each compile linked to its entry
    page.get_by_text("Download this session").click()
    page.get_by_role("button", name="Profile the latest run for Perfetto").click()
    expect(page.get_by_role("row", name=re.compile(r"-perfetto\.json\.gz "))).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Compile report for tlparse (zip)").click()
    expect(page.get_by_role("row", name=re.compile(r"-tlparse\.zip "))).to_be_visible(timeout=TIMEOUT)
    entry = page.get_by_role("link", name="its entry in the report").first
    with page.context.expect_page() as opened:
        entry.click()
    report = opened.value
    expect(report.locator('a[id="[0/0]"]')).to_have_count(1, timeout=TIMEOUT)  # tlparse's index, at compile 0/0
    shot(report, "04-compiled-tlparse-report")


def test_an_emptied_box_says_so_without_error_marks_and_the_page_keeps_working(page: Page, app_url):
    loaded(page, app_url)
    type_in(page, "")
    expect(page.get_by_text(re.compile("The input is empty"))).to_be_visible(timeout=TIMEOUT)
    page.wait_for_timeout(500)  # an error toast or badge would be drawn by now
    expect(page.locator(".toast-body")).to_have_count(0)
    expect(page.get_by_text("Error", exact=True)).to_have_count(0)  # Gradio's red badges over every output
    assert card(page, "tokens") == "42"  # the previous run's figures stay
    shot(page, "05-bad-input")
    type_in(page, "Back to work.")
    expect(page.locator(".card .value").first).to_have_text("13", timeout=TIMEOUT)


def test_a_state_link_restores_model_config_text_and_presentation(page: Page, app_url):
    loaded(page, app_url + "?model=transformer&text=Hand+this+out&layers=3&heads=2")
    expect(page.locator(".card .value").first).to_have_text("13", timeout=TIMEOUT)
    expect(page.get_by_label(INPUT)).to_have_value("Hand this out")
    expect(page.get_by_role("spinbutton", name="layers").first).to_have_value("3")
    # the link follows the run (its own update, a moment after the cards on a busy machine: read once, it was the
    # page's first link twice in CI-like runs)
    expect(page.get_by_role("link", name="link to this state")).to_have_attribute(
        "href", re.compile(r"^(?=.*model=transformer)(?=.*layers=3)(?=.*heads=2)"), timeout=TIMEOUT)
    page.get_by_label("presentation mode").check()
    expect(page.locator("body.ge-presentation")).to_have_count(1)
    page.wait_for_timeout(1000)  # the figures re-fit to their new width
    texts = plot_texts(page, page.locator(".js-plotly-plot").filter(visible=True).first)  # the autograd graph
    assert {"head", "(loss)"} <= {t["text"] for t in texts} and not overlaps(texts), overlaps(texts)
    assert broken_words(page) == []  # a card's long value smaller, not split between letters
    shot(page, "07-state-link-presentation")


def test_the_session_downloads_as_csv_html_script_and_notebook(page: Page, app_url):
    loaded(page, app_url)
    page.get_by_text("Download this session").click()
    page.get_by_role("button", name="Prepare CSV, HTML report, script and notebook").click()
    expect(page.get_by_text(re.compile(r"graph-explorer-.*\.html"))).to_be_visible(timeout=TIMEOUT)
    for suffix in ("csv", "py", "ipynb"):
        expect(page.get_by_text(re.compile(rf"graph-explorer-.*\.{suffix}$"))).to_be_visible()
    # tlparse's report before any compile: said at once beside the button, no error mark, the files stay
    page.get_by_role("button", name="Compile report for tlparse (zip)").click()
    expect(page.get_by_text("Not yet: compile the latest run first")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Profile the latest run for Perfetto").click()  # queued after the report's
    expect(page.get_by_role("row", name=re.compile(r"-perfetto\.json\.gz "))).to_be_visible(timeout=TIMEOUT)
    for suffix in ("html", "csv"):  # joined, not replaced; and the report's queued part changed nothing
        expect(page.get_by_text(re.compile(rf"graph-explorer-.*\.{suffix}$"))).to_be_visible()
    expect(page.locator(".error").filter(visible=True)).to_have_count(0)
    shot(page, "08-downloads")


PARAGRAPH = ("Define-by-run means the graph is built while the program runs: a loop over the tokens leaves one "
             "copy of its body per token, and an if leaves only the branch it took.")


def test_a_pasted_paragraph_and_a_deleted_selection_run_without_another_key(page: Page, app_url, context):
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    loaded(page, app_url)
    page.evaluate("text => navigator.clipboard.writeText(text)", PARAGRAPH)
    box = page.get_by_label(INPUT)
    box.click()
    box.press("Control+A")
    box.press("Control+V")  # a paste fires no key event the old `.input` wiring listened to
    expect(page.locator(".card .value").first).to_have_text(str(len(PARAGRAPH.encode())), timeout=TIMEOUT)
    box.press("Control+A")
    box.press("Delete")
    expect(page.get_by_text(re.compile("The input is empty")).first).to_be_visible(timeout=TIMEOUT)
    shot(page, "09-paste-and-delete")


def test_typing_a_number_into_a_slider_box_runs_the_settled_value_only(page: Page, app_url):
    loaded(page, app_url)
    box = page.get_by_role("spinbutton", name="hidden").first
    box.click()
    box.press("Control+A")
    box.press_sequentially("256", delay=100)  # the prefixes 2 and 25 must not run
    box.press("Enter")
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"architecture change \(hidden 64->256\)"),
                                                               timeout=TIMEOUT)


def test_picking_a_model_with_the_mouse_runs_it_once(page: Page, app_url):
    loaded(page, app_url)
    page.get_by_label("model", exact=True).click()
    page.get_by_role("option", name="Transformer encoder").click()
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"previous model \(rnn\) -> transformer"),
                                                               timeout=TIMEOUT)
    page.wait_for_timeout(1500)  # a second run would now replace the diff with "the same graph"
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"previous model \(rnn\) -> transformer"))


def test_a_bad_state_link_says_so_and_opens_the_defaults(page: Page, app_url):
    loaded(page, app_url + "?model=nope")
    expect(page.get_by_text(re.compile("This link could not be restored")).first).to_be_visible(timeout=TIMEOUT)
    assert card(page, "tokens") == "42"


def test_a_number_past_a_slider_bound_runs_clamped_and_the_box_agrees_with_the_graph(page: Page, app_url):
    loaded(page, app_url)
    box = page.get_by_role("spinbutton", name="layers").first
    top = box.get_attribute("max")
    box.click()
    box.press("Control+A")
    box.press_sequentially("99")
    box.press("Tab")  # leaving the box settles it; Gradio alone would refuse 99 and show the clamped max
    diff = page.get_by_label("diff", exact=True)
    expect(diff).to_have_value(re.compile(rf"architecture change \(layers 1->{top}\)"), timeout=TIMEOUT)
    expect(box).to_have_value(top)
    expect(page.get_by_role("status").filter(has_text=f"99 is past {top}, the most: {top} is used")).to_be_visible()
    shown = nodes(page)
    box.click()
    box.press("Control+A")
    box.press_sequentially("abc")  # not a number: the box keeps the value of the run on screen
    box.press("Tab")
    expect(box).to_have_value(top)
    expect(page.locator(".toast-body")).to_have_count(0)
    assert nodes(page) == shown


def test_a_refused_value_says_why_once_and_its_message_closes_when_a_valid_one_runs(page: Page, app_url):
    loaded(page, app_url + "?model=transformer&text=Hand+this+out")
    heads = page.get_by_role("spinbutton", name="heads").first
    heads.fill("3")
    heads.press("Enter")  # and then leaving the box: one refusal, not one per event
    page.get_by_role("heading", name="Graph Explorer").click()
    toast = page.locator(".toast-body")
    expect(toast).to_have_count(1, timeout=TIMEOUT)
    expect(toast).to_contain_text("must be a multiple of heads (3)")
    expect(page.locator(".toast-count")).to_have_count(0)  # Gradio's "Error (2)" for a repeated message
    heads.fill("4")
    heads.press("Enter")
    expect(toast).to_have_count(0, timeout=5_000)  # Gradio alone would keep it 10 s, over a graph that ran


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
    loaded(page, app_url)
    assert _hover_known_nodes(page) >= 4
    page.get_by_label("presentation mode").check()
    page.wait_for_timeout(1000)  # the figures re-fit to their new width
    assert _hover_known_nodes(page) >= 4
    shot(page, "presentation-hover")


# Each control keyed by what it is (its tag, id, and name or text, with its place among controls keyed alike), not
# by a mark on the element: Gradio replaces an HTML block's elements when its value changes (the header's link to
# this state, updated as a run ends), and a mark on the replaced element was lost (a control "not reachable" once).
_KEYS = """() => { const seen = {};
  const key = (e) => {
    const k = [e.tagName, e.id, e.getAttribute('aria-label') || (e.innerText || '').trim().slice(0, 60)
      || e.getAttribute('href')].join('|');
    seen[k] = (seen[k] || 0) + 1;
    return `${k}|${seen[k]}`; };
  return [...document.querySelectorAll('input, button, select, textarea, a[href], [tabindex]')]
    .filter((e) => e.tabIndex >= 0 && !e.disabled && e.offsetParent !== null && e.getClientRects().length)
    .map((e) => [e, key(e)]); }"""
_FOCUSABLE = f"() => ({_KEYS})().map(([, k]) => k)"
_NAME = f"""() => {{ const e = document.activeElement; const mine = ({_KEYS})().find(([c]) => c === e);
  if (!mine) return null;
  const byId = e.id && document.querySelector(`label[for="${{e.id}}"]`);
  const block = e.closest('.block')?.querySelector('[data-testid="block-info"]');
  const name = e.getAttribute('aria-label') || e.labels?.[0]?.innerText || (byId && byId.innerText) || e.title
    || e.innerText || e.dataset.title || e.querySelector('title')?.textContent || e.closest('label')?.innerText
    || block?.innerText;
  return [mine[1], (name || '').trim()]; }}"""


def test_every_playground_control_is_reached_and_named_with_the_keyboard(page: Page, app_url):
    loaded(page, app_url)
    controls = set(page.evaluate(_FOCUSABLE))
    page.locator("body").click(position={"x": 5, "y": 5})
    reached: dict[str, str] = {}
    for _ in range(3 * len(controls)):
        page.keyboard.press("Tab")
        got = page.evaluate(_NAME)
        if got is not None:
            reached[got[0]] = got[1]
        if controls <= set(reached):
            break
    assert controls <= set(reached), f"not reachable with Tab: {sorted(controls - set(reached))}"
    unnamed = [i for i, name in reached.items() if not name]
    assert not unnamed, f"{len(unnamed)} controls without a name"


def test_a_collapsed_module_opens_from_the_menu_under_the_graph(page: Page, app_url):
    loaded(page, app_url)  # the RNN on 42 tokens: 686 nodes, drawn collapsed per call
    # the graph's own block (a failure shows what it holds: an empty plot, or a figure without this title)
    graph = page.locator(".block").filter(has=page.get_by_test_id("block-label").filter(has_text="autograd graph"))
    title = graph.locator(".gtitle")
    # the final view can arrive before the browser has drawn the graph sent ahead of it (686 nodes, a busy machine)
    expect(title).to_contain_text("collapsed per call", timeout=TIMEOUT)
    expect(graph.locator(".legendtext").first).to_contain_text("42 steps")
    menu = page.get_by_label("open a module")
    menu.click()
    page.get_by_role("option", name=re.compile(r"^layers\.0\.fwd \(")).click()
    expect(title).to_contain_text("layers.0.fwd opened", timeout=TIMEOUT)
    expect(title).to_contain_text("686 nodes")  # the counts are the whole graph's, opened or not
    shot(page, "graph-opened")


# Where a node of an operation (a circle; parameters are squares) is drawn on the Playground's graph, in the page.
_AN_OPERATION = """(graph) => { const gd = graph.querySelector('.js-plotly-plot');
  const i = gd.data.findIndex((t) => t.customdata && t.marker.symbol.includes('circle'));
  const j = gd.data[i].marker.symbol.indexOf('circle');
  const r = graph.querySelectorAll('.scatterlayer .trace')[i].querySelectorAll('.points path')[j]
    .getBoundingClientRect();
  return [r.x + r.width / 2, r.y + r.height / 2]; }"""


def test_a_clicked_node_opens_the_lines_that_ran_at_its_line_and_a_picked_line_rings_its_nodes(page: Page, app_url):
    loaded(page, app_url)  # the RNN on 42 tokens: the time step's line ran 42 times
    # a node clicked in the graph, the lines' box closed: it opens, the node's line marked in the table, ringed
    graph = page.locator(".ge-graph")
    graph.scroll_into_view_if_needed()
    x, y = graph.evaluate(_AN_OPERATION)
    page.mouse.click(x, y)
    picked = page.get_by_text(re.compile(r"^You picked .* made at models/rnn\.py:\d+"))
    expect(picked).to_be_visible(timeout=TIMEOUT)
    made_at = re.search(r"models/rnn\.py:\d+", picked.inner_text()).group(0)
    expect(page.get_by_role("row").filter(has_text=made_at).get_by_role("gridcell").first).to_have_css(
        "background-color", "rgb(253, 230, 138)")  # ui/python_views.MARKED
    expect(graph.locator(".legendtext").filter(has_text=f"{made_at}: ")).to_be_visible()
    step = page.get_by_role("row").filter(has_text="new = cell(x, state)")
    expect(step).to_contain_text("42", timeout=TIMEOUT)
    expect(page.get_by_text(re.compile(r"lines? of models/rnn\.py ran for this input"))).to_be_visible()
    # and which way each branch went: the time loop's body once per token
    expect(page.get_by_role("row").filter(has_text="for t, x in enumerate(xs):").filter(
        has_text="body ran 42 times")).to_be_visible()
    line = re.search(r"models/rnn\.py:\d+", step.inner_text()).group(0)
    step.get_by_text("new = cell(x, state)").click()
    expect(graph.locator(".legendtext").filter(has_text=f"{line}: ")).to_be_visible(timeout=TIMEOUT)
    expect(graph.locator(".gtitle")).to_contain_text(f"made at {line}")
    shot(page, "lines-that-ran")
    # where the time went: profiled on request, the graph coloured by each node's time on a scale
    page.get_by_text("Where the time went: the train step profiled node by node").click()
    page.get_by_role("button", name="Profile this input").click()
    expect(page.get_by_text(re.compile(r"The train step profiled in a pass of its own \(5 repeats"))).to_be_visible(
        timeout=TIMEOUT)
    heat = page.locator(".block").filter(has=page.get_by_test_id("block-label").filter(
        has_text="the graph coloured by each node's time"))
    expect(heat.locator(".colorbar")).to_have_count(1, timeout=TIMEOUT)
    expect(page.get_by_role("row").filter(has_text="layers.0.fwd").first).to_be_visible()
    shot(page, "where-the-time-went")


def test_the_playground_generates_from_its_input_and_the_step_slider_redraws_each_caches_graph(page: Page, app_url):
    loaded(page, app_url)
    opened(page, page.get_by_text("Generation: this input as a prompt"))
    tokens = page.get_by_role("spinbutton", name="tokens").filter(visible=True)
    expect(tokens).to_have_value("32")  # the panel is drawn with its default before it is edited
    tokens.fill("12")  # a dozen tokens: the run stays short
    tokens.press("Tab")  # and the box is left, as a person does before reaching for the button
    expect(tokens).to_have_value("12")
    page.get_by_role("button", name="Generate", exact=True).filter(visible=True).click()
    # the Playground's input as the prompt, three caches: the verdict, then the raw report under it
    verdict = page.get_by_text(re.compile("^Verdict: the dynamic cache generates the same tokens as none"))
    expect(verdict).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("svg text", has_text="static cache, decode step 1:")).to_be_visible()
    step = page.get_by_role("spinbutton", name="graph_step").filter(visible=True)
    expect(step).to_have_attribute("max", "11")  # the slider spans this run's 12 steps
    step.click()
    step.press("Control+A")
    step.press_sequentially("9")
    step.press("Enter")  # settles the slider: the graphs are redrawn from the run, not generated again
    for kind in ("none", "dynamic", "static"):
        expect(page.locator("svg text", has_text=f"{kind} cache, decode step 9:")).to_be_visible(timeout=TIMEOUT)
    expect(verdict).to_be_visible()
    shot(page, "playground-generation")


def test_on_a_phone_the_input_and_the_graph_come_before_the_controls(page: Page, app_url):
    """390x844: the input on the first screen and the graph within the first two (below every knob they were 1.7
    and 3.5 screens down)."""
    page.set_viewport_size({"width": 390, "height": 844})
    loaded(page, app_url)
    box = page.get_by_label(INPUT).bounding_box()
    graph = page.locator(".js-plotly-plot").filter(visible=True).first.bounding_box()
    assert box["y"] < 844 and graph["y"] < 2 * 844, (box, graph)
    knob = page.get_by_role("spinbutton", name="hidden").first.bounding_box()
    assert knob["y"] > graph["y"]  # the controls after the graph
    shot(page, "10-phone")


def test_after_a_model_switch_no_earlier_compiled_figure_stays_beside_the_new_eager_ones(page: Page, app_url):
    loaded_short(page, app_url)
    page.get_by_role("radio", name="aot_eager").check()
    page.get_by_label("compile", exact=True).check()
    expect(page.get_by_text("Compiled with aot_eager")).to_be_visible(timeout=TIMEOUT)
    # every text the page shows from here on, however briefly (a fast compile replaces the waiting cards soon)
    page.evaluate("""() => { window.geSeen = [];
      new MutationObserver(() => window.geSeen.push(document.body.innerText)).observe(document.body,
        {subtree: true, childList: true, characterData: true}); }""")
    page.get_by_label("model", exact=True).click()
    page.get_by_role("option", name="Transformer encoder").click()
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"previous model \(rnn\) -> transformer"),
                                                               timeout=TIMEOUT)
    # from the switch until the transformer's compile is in, its cards wait: rnn's are gone
    page.wait_for_function("() => window.geSeen.some((t) => t.includes('compiling transformer'))", timeout=TIMEOUT)
    page.get_by_label("compile", exact=True).uncheck()  # off: the cards go too
    expect(page.get_by_text("Compiled execution is off")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(".card .label", has_text="speed-up vs eager")).to_have_count(0)
