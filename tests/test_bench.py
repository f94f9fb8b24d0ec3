"""Every benchmark script runs as the README shows it (`python -m bench.<name>`), in its smallest mode. Those that
start the app run in tests/app/test_bench_apps.py and those that compile in tests/test_bench_compiling.py (files of
their own, so that the two test processes share them out)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ("__init__", "common", "appserver", "phases", "screenshot")  # modules the scripts share, not scripts
SCRIPTS = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if p.stem not in HELPERS)
# tests/app/: load in test_load.py, the rest beside it
STARTS_THE_APP = ["code_edit", "ddp_responsiveness", "graph_paint", "load", "soak", "startup"]
COMPILES = ["batching", "compile_costs", "compile_interference", "first_compile", "generate", "optimize", "reproduce"]


def test_every_script_is_listed():
    assert SCRIPTS == ["batching", "claims", "code_edit", "compile_costs", "compile_interference", "ddp",
                       "ddp_responsiveness", "debug", "deploy", "first_compile", "gc_pause", "generate", "graph_paint",
                       "library", "load", "optimize", "reproduce", "soak", "startup", "update_latency", "worker_memory"]
    assert sorted(s for s in SCRIPTS if "start_app" in (ROOT / "bench" / f"{s}.py").read_text()) == STARTS_THE_APP


def runs_as_documented(script: str, out: Path) -> None:
    done = subprocess.run([sys.executable, "-m", f"bench.{script}", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text().count("\n") >= 3


@pytest.mark.slow
@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in STARTS_THE_APP + COMPILES])
def test_the_script_runs_from_the_repository_root_and_writes_its_results(script, tmp_path):
    runs_as_documented(script, tmp_path / "results.md")
