"""The benchmarks that drive Chromium, in their smallest mode (`--quick`), measured in this process's browser on
this process's app (tests/app/conftest.py: one app per test process, its Code tab allowed): what each script's
`main` adds, an app of its own and a browser, is what every other browser test starts already. Their results are
written as the scripts write them."""

import re

import pytest

from bench import code_edit, graph_paint, page_load

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("script", [code_edit, graph_paint], ids=["code_edit", "graph_paint"])
def test_the_script_measures_in_a_real_browser_and_writes_its_results(script, page, app_url, tmp_path):
    rows = script.measure(page, app_url, quick=True)
    assert rows and all(r.startswith("| ") for r in rows)
    out = tmp_path / "results.md"
    out.write_text(script.results(rows, quick=True))
    text = out.read_text()
    assert f"python -m bench.{script.__name__.split('.')[-1]} --quick" in text and all(r in text for r in rows)


def test_a_page_loads_seconds_are_read_from_the_browser_and_the_server(page, app_url):
    """bench.page_load finds this process's Chromium and its app's server (their seconds are not zero: a page
    load runs the page's script and the app's load events), and what the page's script walks."""
    rows = page_load.measure(page, app_url, quick=True)
    assert "python -m bench.page_load --quick" in page_load.results(rows, quick=True)
    figure = {r.split(" | ")[0].removeprefix("| "): r.split(" | ")[1] for r in rows}
    assert float(figure["Chromium's CPU-seconds (every process)"]) > 0
    assert float(figure["the server's CPU-seconds (and its workers')"]) > 0
    assert re.fullmatch(r"\d+ components, \d+ event dependencies \([\d,]+ inputs in all\), [\d,]+ KiB",
                        figure["the app's config"])
