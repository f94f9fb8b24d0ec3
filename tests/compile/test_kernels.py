"""The compiled forward's kernels, each traced to the FX nodes dynamo captured: real inductor compiles with its
provenance on, real profiles, on a zoo model (a fused attention fallback among them), the shipped image example
(convolutions) through a notebook's run, a library architecture through the CLI, and a model dynamo captures nothing
of."""

import json

import pytest
import torch

from explorer.compile.kernels import kernel_costs
from explorer.core.errors import InputError
from explorer.runs.session import Session
from explorer.sources.registry import add_model_file
from models.tokenizer import encode
from tests.helpers import ROOT, cli

pytestmark = pytest.mark.slow
TEXT = "The cat sat on the mat."


@pytest.mark.parametrize("model", ["transformer", "examples/image_cnn.py"])
def test_every_kernel_is_found_in_the_profile_and_traced_to_nodes_of_the_captured_graph(model, menu_restored):
    session = Session()
    session.configure(add_model_file(str(ROOT / model)) if model.endswith(".py") else model, {})
    costs = kernel_costs(session.model, torch.tensor([encode(TEXT)]), repeats=3)
    assert costs.kernels and costs.unmatched == ()  # every kernel the mapping names, found in the profile
    names = [{n.name for n in graph} for graph in costs.graphs]
    for k in costs.kernels:
        assert k.us > 0 and k.fx_nodes and set(k.fx_nodes) <= names[k.graph], k
    assert any(k.generated and len(k.fx_nodes) > 1 for k in costs.kernels)  # inductor fused nodes into one kernel
    assert any(not k.generated for k in costs.kernels)  # and called ATen for the matmuls or convolutions
    shares = sum(sum(costs.node_us(g).values()) for g in range(len(costs.graphs)))
    assert shares == pytest.approx(costs.kernels_us)  # the nodes' shares add up to the kernels' time
    assert costs.kernels_us < costs.region_us  # the kernels run inside the compiled regions


def test_a_model_dynamo_captures_nothing_of_is_refused_in_one_sentence(menu_restored):
    session = Session()
    session.configure(add_model_file(str(ROOT / "tests/outside/moe_top1.py")), {})
    with pytest.raises(InputError, match="dynamo captured no graph of this model's forward"):
        kernel_costs(session.model, torch.tensor([encode(TEXT)]), repeats=1)


def test_inspect_kernels_reports_them_for_a_library_architecture():
    run = cli("inspect", "--model", "gpt2", "--set", "layers=1", "--set", "width=32", "--text", TEXT, "--kernels",
              "--json")
    assert run.returncode == 0, run.stderr
    kernels = json.loads(run.stdout)["kernels"]
    assert kernels["kernels"] and kernels["unmatched"] == []
    assert sum(k["us"] for k in kernels["kernels"]) == pytest.approx(kernels["kernels_us"])
    assert any(k["generated"] for k in kernels["kernels"]) and any(not k["generated"] for k in kernels["kernels"])


def test_a_notebooks_run_shows_its_kernels(menu_restored):
    from explorer.notebook import explore

    run = explore(str(ROOT / "examples/image_cnn.py"), TEXT)  # a file: its own process for the fresh compile
    try:
        shown = run.kernels()
    finally:
        run.workers.stop()
    assert "compiled afresh with inductor" in shown.text and shown.graph is not None
    assert shown.report["kernels"] and shown.report["unmatched"] == []


def test_a_model_living_only_in_the_notebook_is_refused_not_reset():
    from explorer.views.kernels import kernels_update
    from explorer.workers.protocol import Here, Workers

    session = Session()
    with pytest.raises(InputError, match="lives only in this notebook"):
        next(kernels_update(session, Workers.on(Here())))  # a notebook object's: everything in the kernel's process
