"""A lesson step as a notebook: the step's words and the room's prediction, the engine its experiment runs on carried
inside it, and the server's result set beside the one it measures. Every step's notebook runs outside this
repository where Python and torch are all there is to import (each in a process forked from one that imported
torch alone, a finder refusing every other package the app installs), and one runs in a real Jupyter kernel so."""

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace

import nbformat
import pytest
from nbclient import NotebookClient
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from explorer.artefacts.lesson import claim_module, engine, lesson_notebook, step_of
from explorer.claims.board import CLAIMS
from explorer.claims.evidence import ClaimResult, run_claim
from explorer.claims.lessons import STEPS
from explorer.core.errors import InputError
from explorer.workers.protocol import Here, Workers
from tests.helpers import cli


def beyond_torch() -> list[str]:
    """The top-level modules of every installed distribution that is neither torch nor one it requires,
    transitively (extras left out), and that none of those ships (setuptools vendors some): what a machine with only
    torch installed could not import."""
    by_dist: dict[str, set[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for d in dists:
            by_dist.setdefault(canonicalize_name(d), set()).add(module)
    torchs, todo = set(), ["torch"]
    while todo:
        dist = canonicalize_name(todo.pop())
        if dist in torchs or dist not in by_dist:
            continue
        torchs.add(dist)
        for r in map(Requirement, importlib.metadata.requires(dist) or []):
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name)
    shipped = {part for d in torchs for f in importlib.metadata.files(d) or [] for part in f.parts}  # vendored too
    return sorted(set().union(*(m for d, m in by_dist.items() if d not in torchs)) - shipped)


# In place of the finder of installed modules, before anything else imports: a package installed here beyond torch's
# (REFUSED), unless already imported (the kernel's own), is not found, as if it were not installed.
REFUSE_THE_REST = '''
import importlib.abc, importlib.machinery, sys

class _TorchAlone(importlib.abc.MetaPathFinder):
    before = {name.partition(".")[0] for name in sys.modules}

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in REFUSED and name.partition(".")[0] not in self.before:
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)

    def invalidate_caches(self):
        importlib.machinery.PathFinder.invalidate_caches()

sys.meta_path[sys.meta_path.index(importlib.machinery.PathFinder)] = _TorchAlone()
'''

# Each notebook's code cells, in a child forked from this process (torch imported, nothing of the app's): the
# quick experiment, its printout written to the notebook's name + ".out", and the file the engine was imported from.
FORKED = REFUSE_THE_REST + '''
import contextlib, json, os, traceback
import torch, torch._dynamo, torch._inductor.compile_fx  # (torch's: imported once)

for path in sys.argv[1:]:
    if os.fork() == 0:
        with open(path + ".out", "w") as out, contextlib.redirect_stdout(out):
            try:
                namespace = {}
                for cell in json.load(open(path))["cells"]:
                    if cell["cell_type"] == "code":
                        source = "".join(cell["source"]).replace("QUICK = False", "QUICK = True")
                        exec(compile(source, path, "exec"), namespace)
                print("engine imported from", sys.modules["explorer"].__file__)
                code = 0
            except BaseException:
                traceback.print_exc(file=out)
                code = 1
        os._exit(code)
    os.wait()
'''


@pytest.mark.parametrize("number", range(1, len(STEPS) + 1))
def test_each_step_is_a_notebook_with_its_words_its_prediction_and_the_engine_its_experiment_needs(number):
    s = STEPS[number - 1]
    nb = nbformat.reads(lesson_notebook(number), as_version=4)
    nbformat.validate(nb)
    intro, predict, unpack, run, beside, ask = nb.cells
    assert CLAIMS[s.claim].statement in intro.source and s.notice in intro.source and s.question in ask.source
    assert "run the cells in order" in intro.source and f"**In the app**, the step says: {s.do}" in intro.source
    assert s.predict.question in predict.source
    assert f"from {claim_module(CLAIMS[s.claim])} import CLAIM" in run.source and "QUICK = False" in run.source
    assert unpack.metadata["jupyter"]["source_hidden"] and "SERVER = json.loads('null')" in beside.source
    carried = engine(number)
    assert f"({len(carried)} files of explorer/ and models/" in unpack.source
    # what the experiment imports, not the app: no page, no lab's figures, no notebook API (it would need plotly)
    assert not [m for m in carried if m.startswith(("explorer.ui", "explorer.notebook")) or m.endswith(".view")]


def test_every_steps_notebook_runs_outside_the_repository_with_torch_alone(tmp_path):
    paths = []
    for number in range(1, len(STEPS) + 1):
        paths.append(tmp_path / f"step-{number}.ipynb")
        paths[-1].write_text(lesson_notebook(number))
    away = tmp_path / "elsewhere"
    away.mkdir()
    ran = subprocess.run([sys.executable, "-I", "-c", f"REFUSED = {beyond_torch()!r}\n" + FORKED, *map(str, paths)],
                         cwd=away, capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for path in paths:
        printed = (tmp_path / f"{path.name}.out").read_text()
        shutil.rmtree(unpacked_in(printed))
        assert "verdict: " in printed and "no result of the server's came with this notebook" in printed, printed
        assert f"engine imported from {tempfile.gettempdir()}/graph-explorer-" in printed, printed  # not the clone


def unpacked_in(printed: str) -> str:
    """The folder a notebook's engine cell says it unpacked into (a test removes it)."""
    return re.search(r"the engine: \d+ files, in (\S+)", printed).group(1)


def test_a_steps_notebook_runs_in_a_jupyter_kernel_and_sets_its_figures_beside_the_servers(tmp_path):
    *_, server = run_claim(CLAIMS["shape"], Workers.on(Here(), quick=True))  # what a (quick) server's board holds
    assert isinstance(server, ClaimResult)
    nb = nbformat.reads(lesson_notebook(1, server), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(f"REFUSED = {beyond_torch()!r}\n" + REFUSE_THE_REST))
    nb.cells[4].source = nb.cells[4].source.replace("QUICK = False", "QUICK = True")
    nb.cells.insert(4, nbformat.v4.new_code_cell(nb.cells[3].source))  # the engine's cell run twice: as it was
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    unpacked = ["".join(o.get("text", "") for o in nb.cells[i].outputs) for i in (3, 4)]
    shutil.rmtree(unpacked_in(unpacked[0]))
    assert unpacked[0] == unpacked[1] and f" in {tempfile.gettempdir()}/graph-explorer-" in unpacked[0], unpacked
    printed = "".join(o.get("text", "") for o in nb.cells[6].outputs)
    for label, value, _ in server.evidence.shown:
        assert f"  {label}: " in printed and f"; {value} on the server" in printed, printed
    assert "verdict here: " in printed and f"verdict on the server: {server.verdict.kind.value}" in printed
    assert "quick: a reduced experiment" in printed  # both quick: said, on both lines


def test_the_cli_writes_a_steps_notebook_with_this_machines_server_result_and_refuses_a_claim_that_is_no_step(
        tmp_path, monkeypatch):
    *_, measured = run_claim(CLAIMS["shape"], Workers.on(Here(), quick=True))
    kept = replace(measured, quick=False)  # as a server (not a quick one) keeps it in its file
    monkeypatch.setenv("GE_CLAIMS_FILE", str(tmp_path / "claims.json"))
    (tmp_path / "claims.json").write_text(json.dumps({"shape": kept.as_dict()}))
    out = cli("claim", "--claim", "shape", "--notebook", str(tmp_path / "step.ipynb"))
    assert out.returncode == 0, out.stderr
    nb = nbformat.read(tmp_path / "step.ipynb", as_version=4)
    assert nb.cells[0].source.startswith("# Graph Explorer, step 1 of 9")
    carried = {"json": json}
    exec(nb.cells[4].source.splitlines()[4], carried)  # the SERVER = json.loads(...) line
    assert carried["SERVER"]["measured_at"] == kept.measured_at and carried["SERVER"]["why"] == kept.verdict.why
    with pytest.raises(InputError, match="'generation' is no lesson step"):
        step_of("generation")
