"""Real-browser scenarios of the labs, the claims and the whole page's accessibility: headless Debian Chromium
driven by Playwright against the real app (fixtures in conftest.py, shared steps in browser.py)."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.app.browser import TIMEOUT, loaded, loaded_short, opened, overlaps, plot_texts, shot
from tests.helpers import ensure_axe

pytestmark = pytest.mark.slow


def test_the_batching_lab_runs(page: Page, app_url):
    loaded(page, app_url)
    opened(page, page.get_by_role("tab", name="Batching lab"))
    # a class's own sentences, pasted: four, not the 64 generated ones (the lab at its defaults: tests/labs/batching)
    lines = page.get_by_role("textbox", name=re.compile("^lines")).filter(visible=True)
    lines.fill("Hi.\nA longer sentence than that.\nMedium one.\nAnd a fourth, longest of the four by a few words.")
    page.get_by_role("button", name="Run the lab").click()
    expect(page.get_by_text("Fastest correct forward").first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("per-sample loop").first).to_be_visible()
    page.get_by_label("presentation mode").check()  # at a projector: the labels larger, the plots as narrow
    page.wait_for_timeout(1000)  # the figures re-fit to their boxes
    for plot in page.locator(".js-plotly-plot").filter(visible=True).all():
        texts = plot_texts(page, plot)
        assert not overlaps(texts), overlaps(texts)
        assert not [t for t in texts if t["size"] < 12], texts
    shot(page, "06-batching-lab")


def test_the_deployment_lab_freezes_the_playgrounds_model(page: Page, app_url):
    loaded_short(page, app_url)
    opened(page, page.get_by_role("tab", name="Deployment lab"))
    for slow in ("export (Dim.AUTO)", "onnx"):  # aoti is off by default
        page.get_by_label(slow, exact=True).uncheck()
    page.get_by_role("button", name="Freeze the current model").click()
    # the rnn's trace refuses other lengths: a loud failure in the table once the routes have run
    expect(page.get_by_role("gridcell", name="fails loudly").first).to_be_visible(timeout=TIMEOUT)
    verdict = page.get_by_text(re.compile("^Verdict: No route freezes this model as written"))
    expect(verdict).to_be_visible(timeout=TIMEOUT)  # once every route has run (the first row comes sooner)
    shot(page, "10-deployment-lab")
    artefact = page.get_by_text(re.compile(r"traced\.pt")).filter(visible=True)
    expect(artefact.first).to_be_visible()  # offered for download


def test_the_debugging_lab_shows_the_bug_in_each_mode(page: Page, app_url):
    loaded(page, app_url)
    page.get_by_role("tab", name="Debugging lab").click()
    page.get_by_role("button", name="Run the bug").click()
    expect(page.get_by_role("gridcell", name="TorchRuntimeError", exact=False).first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile("^Verdict: shape bug on long inputs: eager names models/bugs.py"))
           ).to_be_visible()
    # the graph eager mode built before it raised, drawn (its title says where)
    expect(page.locator(".js-plotly-plot").filter(has_text="Autograd graph up to the failure").first).to_be_visible(
        timeout=TIMEOUT)
    shot(page, "11-debugging-lab")


def test_the_multi_process_lab_runs_a_scenario_on_the_playgrounds_model(page: Page, app_url):
    loaded(page, app_url)  # the Playground's rnn: a model the stragglers scenario takes
    opened(page, page.get_by_role("tab", name="Multi-process lab"))
    page.get_by_role("radio", name="Stragglers from variable lengths").check()
    page.get_by_role("button", name="Run the scenario").click()
    expect(page.get_by_text(re.compile("^Verdict: Round-robin sharding: median step"))).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile("Model: the Playground's rnn and its architecture"))).to_be_visible()
    expect(page.get_by_role("listitem").filter(
        has_text="rank 0 ran to its end, 14 steps in all; rank 1 ran to its end, 14 steps in all")
    ).to_be_visible()  # how each rank ended
    expect(page.get_by_role("gridcell", name="equal tokens: step (slowest rank)")).to_be_visible()
    expect(page.locator(".js-plotly-plot").filter(visible=True).first).to_be_visible()  # the timeline
    shot(page, "12-multi-process-lab")


_AXE = """async () => (await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})).violations
  .filter((v) => v.impact === 'serious' || v.impact === 'critical')
  .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.html.slice(0, 100)).join(' | ')}`)"""
TABS = ["Playground", "Batching lab", "Deployment lab", "Debugging lab", "Multi-process lab", "Claims", "Lessons"]


def test_no_serious_or_critical_wcag_violation_on_any_tab(page: Page, app_url):
    loaded(page, app_url)  # the Playground with a run on screen: graph, cards, history, raw numbers
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


def test_the_deployment_lab_freezes_the_run_on_screen_a_scan_rnn_and_says_so(page: Page, app_url):
    """loop=scan ticked after a timed Python-loop run: the lab freezes the scan model on screen, names it above its
    results, and does not advise loop=scan (it froze the older Python-loop run and did)."""
    loaded_short(page, app_url)
    page.get_by_role("radio", name="scan", exact=True).check()
    expect(page.get_by_label("diff", exact=True)).to_have_value(re.compile(r"architecture change \(loop python->scan"),
                                                               timeout=TIMEOUT)
    opened(page, page.get_by_role("tab", name="Deployment lab"))
    for slow in ("export (Dim.AUTO)", "onnx"):
        page.get_by_label(slow, exact=True).uncheck()
    page.get_by_role("button", name="Freeze the current model").click()
    expect(page.get_by_text(re.compile(r"On the Playground's run: rnn loop=scan, \d+ tokens"))).to_be_visible(
        timeout=TIMEOUT)
    verdict = page.get_by_text(re.compile("^Verdict: "))
    expect(verdict).to_be_visible(timeout=TIMEOUT)
    expect(verdict).not_to_contain_text("Set loop=scan")


def test_a_lab_that_cannot_run_on_the_playgrounds_model_says_so_and_names_the_ones_it_can_before_a_click(
        page: Page, app_url):
    """The shipped example `lstm_tagger` takes forward(ids) only: the batching lab says so on opening its tab (it
    once refused only after its button, with no way out named)."""
    loaded(page, app_url + "?model=lstm_tagger")
    page.get_by_role("tab", name="Batching lab").click()
    notice = page.locator("p", has_text=re.compile("^This lab cannot run on the Playground's lstm_tagger"))
    expect(notice).to_be_visible(timeout=TIMEOUT)
    expect(notice).to_contain_text("It runs on rnn, transformer")
    page.get_by_role("tab", name="Deployment lab").click()  # a lab that runs it says nothing of the kind
    expect(page.get_by_text(re.compile("^This lab cannot run")).filter(visible=True)).to_have_count(0)
