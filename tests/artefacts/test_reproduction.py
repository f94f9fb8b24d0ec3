"""The Playground's latest run as code: the script the CLI writes runs outside this repository with only torch (a
fresh, isolated interpreter in an empty directory) and prints the app's node count; the notebook runs in a real
Jupyter kernel and prints the same. (Its timings against the app's are a benchmark's business, not a test's.)"""

import json
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from explorer.artefacts.perfetto import REGIONS
from explorer.artefacts.script import model_modules, reproducible, sections
from explorer.core.errors import InputError
from explorer.runs.session import Session
from explorer.views.export import ExportDir
from tests.artefacts.test_perfetto import events

TEXT = "The cat sat on the mat, and then it slept."


def test_the_script_and_the_notebook_rebuild_the_run_outside_the_repository_and_the_trace_has_its_compiled_run(
        tmp_path):
    script, notebook, trace = tmp_path / "run.py", tmp_path / "run.ipynb", tmp_path / "run.json.gz"
    out = subprocess.run([sys.executable, "-m", "explorer", "inspect", "--model", "early_exit", "--set", "blocks=3",
                          "--text", TEXT, "--compile", "--backend", "eager", "--json", "--script", str(script),
                          "--notebook", str(notebook), "--chrome-trace", str(trace)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert set(REGIONS) <= {e.get("name") for e in events(trace.read_bytes())}  # compiled as the session was
    nodes = json.loads(out.stdout)["graph"]["nodes"]
    away = tmp_path / "elsewhere"
    away.mkdir()
    ran = subprocess.run([sys.executable, "-I", str(script)], cwd=away, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    figures = json.loads(ran.stdout.strip().splitlines()[-1])
    assert figures["nodes"] == nodes and figures["forward"]["runs"] >= 1 and figures["compiled"]["median_ms"] > 0
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(away)}}).execute()
    printed = nb.cells[-1].outputs[0]["text"]
    assert json.loads(printed)["nodes"] == nodes


def test_only_a_zoo_models_run_is_written_as_code():
    session = Session()
    assert not reproducible(session)  # nothing ran yet
    exports = ExportDir()
    session.configure("gpt2", {"layers": 1})
    session.run("ab")
    assert not reproducible(session)  # a library architecture: not reproduced yet, said in the panel
    assert [p.rsplit(".", 1)[1] for p in exports.write(session)] == ["csv", "html"]
    with pytest.raises(InputError, match="the script reproduces the zoo's models"):
        sections(session)


def test_the_script_carries_each_models_module_and_the_ones_it_imports():
    assert list(model_modules("models.early_exit")) == ["models.branch", "models.config", "models.early_exit",
                                                        "models.heads", "models.tokenizer", "models.transformer"]
