"""The benchmark scripts that compile (in the app's compile worker or in process) run as the README shows them, in
their smallest mode (see tests/test_bench.py)."""

import pytest

from tests.test_bench import COMPILES, SCRIPTS, runs_as_documented


def test_each_is_a_script():
    assert set(COMPILES) <= set(SCRIPTS)


@pytest.mark.slow
@pytest.mark.parametrize("script", COMPILES)
def test_the_script_compiles_and_writes_its_results(script, tmp_path):
    runs_as_documented(script, tmp_path / "results.md")
