"""What a run takes away: as code, the script the CLI writes runs outside this repository with only torch (a fresh,
isolated interpreter in an empty directory) and prints the app's node count, and the notebook runs in a real Jupyter
kernel and prints the same (their timings against the app's are a benchmark's business, not a test's); the
Perfetto trace and tlparse's report of the same run."""

import io
import json
import subprocess
import sys
import zipfile

import nbformat
import pytest
from nbclient import NotebookClient

from explorer.artefacts.perfetto import REGIONS
from explorer.artefacts.script import model_modules, reproducible, reproduction_script, sections
from explorer.artefacts.tlparse import CompileReport, pages, zipped
from explorer.core.errors import InputError
from explorer.runs.session import Session
from explorer.sources.registry import add_model_file
from explorer.views.export import ExportDir
from tests.artefacts.test_perfetto import events
from tests.helpers import ROOT, cli

TEXT = "The cat sat on the mat, and then it slept."


def test_inspect_takes_the_run_away_as_code_a_perfetto_trace_and_a_tlparse_report(tmp_path):
    """One CLI run writes every take-away: the script and the notebook rebuild the run outside the repository, the
    Perfetto trace has the compiled forward, and tlparse's report lists every compile id of the run's timeline."""
    script, notebook, trace = tmp_path / "run.py", tmp_path / "run.ipynb", tmp_path / "run.json.gz"
    out = cli("inspect", "--model", "early_exit", "--set", "blocks=3", "--text", TEXT, "--compile", "--backend",
              "eager", "--json", "--script", str(script), "--notebook", str(notebook), "--chrome-trace", str(trace),
              "--trace-dir", str(tmp_path / "tl"))
    assert out.returncode == 0, out.stderr
    assert set(REGIONS) <= {e.get("name") for e in events(trace.read_bytes())}  # compiled as the session was
    timeline = [e["compile_id"] for e in json.loads(out.stdout)["timeline"]]
    report = CompileReport(tmp_path / "tl", tuple(timeline), pages(tmp_path / "tl" / "report"))
    assert len(timeline) >= 1 and set(timeline) <= set(report.pages)  # each compile id has its entry
    for compile_id in timeline:
        assert f"compile {compile_id}: {report.index}#[{compile_id}]" in out.stderr  # and the CLI names it
    with zipfile.ZipFile(io.BytesIO(zipped(report))) as z:  # what the downloads panel gives
        names = z.namelist()
    assert "report/index.html" in names and any(n.startswith("logs/") and n.endswith(".log") for n in names)
    nodes = json.loads(out.stdout)["graph"]["nodes"]
    away = tmp_path / "elsewhere"
    away.mkdir()
    ran = subprocess.run([sys.executable, "-I", str(script)], cwd=away, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    figures = json.loads(ran.stdout.strip().splitlines()[-1])
    assert figures["nodes"] == nodes and figures["forward"]["runs"] >= 1 and figures["compiled"]["median_ms"] > 0
    # the lines that ran, counted by the script's own tracer, each equal to the app's; the branches; the time per line
    source = (ROOT / "models" / "early_exit.py").read_text().splitlines()
    exit_at = next(i for i, line in enumerate(source, 1) if line.strip() == "break")
    assert "every count equal to the app's" in ran.stdout and figures["lines"][f"early_exit.py:{exit_at}"] == 1
    assert f"early_exit.py:{exit_at - 1}             if self.cfg.threshold" in ran.stdout  # the exit's if, taken
    assert "taken 1 of 1 times" in ran.stdout
    assert figures["costs"] and set(figures["costs"]) <= set(figures["lines"]) and sum(figures["costs"].values()) <= 1
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(away)}}).execute()
    printed = nb.cells[-1].outputs[0]["text"]
    assert json.loads(printed)["nodes"] == nodes


def test_a_library_architecture_is_rebuilt_from_its_config_and_a_users_file_is_refused(tmp_path, menu_restored):
    session = Session()
    assert not reproducible(session)  # nothing ran yet
    session.configure("gpt2", {"layers": 1})
    session.run(TEXT)
    script = tmp_path / "gpt2.py"
    script.write_text(reproduction_script(session))
    ran = subprocess.run([sys.executable, "-I", str(script)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.strip().splitlines()[-1])["nodes"] == len(session.last.capture.graph.nodes)
    assert "every count equal to the app's" in ran.stdout  # transformers' files, its wrapper (the app's) left out
    session.configure(add_model_file(str(ROOT / "examples" / "lstm_tagger.py")), {})
    session.run("ab")
    assert not reproducible(session)
    assert [p.rsplit(".", 1)[1] for p in ExportDir().write(session)] == ["csv", "html"]  # said in the panel
    with pytest.raises(InputError, match="the script reproduces the zoo's models and the library architectures"):
        sections(session)


def test_the_script_carries_each_models_module_and_the_ones_it_imports():
    assert list(model_modules("models.early_exit")) == ["models.branch", "models.config", "models.early_exit",
                                                        "models.heads", "models.tokenizer", "models.transformer"]
