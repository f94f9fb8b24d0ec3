"""`examples/explore.ipynb` executed top to bottom by a real Jupyter kernel (nbclient): each `explore` result shows
its cards and its graph inline, and the report the notebook reads is the engine's."""

import json

import nbformat
from nbclient import NotebookClient

from tests.helpers import ROOT


def _html(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)


def test_the_example_notebook_runs_in_a_kernel_and_shows_graphs_cards_and_labs():
    nb = nbformat.read(ROOT / "examples" / "explore.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "examples")}}
                   ).execute()
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in cells for o in c.outputs if o.output_type == "error"]
    gpt2, numbers, compiled, mine, tagger, debug, lines, costs = cells[1:]
    for shown in (gpt2, mine, tagger):
        page = _html(shown)
        assert "graph nodes" in page and "plotly" in page and "forward" in page
    nodes, median = json.loads(numbers.outputs[0]["data"]["text/plain"].replace("(", "[").replace(")", "]"))
    # GPT-2's train-step graph at 2 layers, its dropout drawn in train mode (tests/sources/test_library.py walks it)
    assert nodes == 152 and median > 0
    assert "compiled forward" in _html(compiled) and "BagOfBytes" in _html(mine)
    assert "FAILS after" in _html(debug) and "models/bugs.py" in _html(debug)
    # the tagger's own lines, with the nodes each made and its branches; its step's time per node, module and line
    said = _html(lines)
    assert "The lines that ran (" in said and "lstm_tagger.py:" in said and "Which way each branch went" in said
    assert "costliest nodes:" in _html(costs) and "per line:" in _html(costs) and "plotly" in _html(costs)
