"""The benchmarks that drive Chromium, in their smallest mode (`--quick`), measured in this process's browser on
this process's app (tests/app/conftest.py: one app per test process, its Code tab allowed): what each script's
`main` adds, an app of its own and a browser, is what every other browser test starts already. Their results are
written as the scripts write them."""

import pytest

from bench import code_edit, graph_paint

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("script", [code_edit, graph_paint], ids=["code_edit", "graph_paint"])
def test_the_script_measures_in_a_real_browser_and_writes_its_results(script, page, app_url, tmp_path):
    rows = script.measure(page, app_url, quick=True)
    assert len(rows) == 1 and rows[0].startswith("| ")
    out = tmp_path / "results.md"
    out.write_text(script.results(rows, quick=True))
    text = out.read_text()
    assert f"python -m bench.{script.__name__.split('.')[-1]} --quick" in text and rows[0] in text
