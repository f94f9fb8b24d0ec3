"""The benchmark scripts that start the app run as the README shows them, in their smallest mode (bench.load is
run by test_load.py, which checks its figures too)."""

import pytest

from tests.test_bench import STARTS_THE_APP, runs_as_documented


@pytest.mark.slow
@pytest.mark.parametrize("script", [s for s in STARTS_THE_APP if s != "load"])
def test_the_script_starts_the_app_and_writes_its_results(script, tmp_path):
    runs_as_documented(script, tmp_path / "results.md")
