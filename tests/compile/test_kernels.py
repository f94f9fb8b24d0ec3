"""The compiled forward's kernels, each traced to the FX nodes dynamo captured: real inductor compiles with its
provenance on, real profiles, on a zoo model (a fused attention fallback among them), the shipped image example
(convolutions), a model whose forward breaks into graphs through the CLI, a library architecture through a
notebook's run, and a model dynamo captures nothing of."""

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
        assert len(k.samples) == costs.repeats == 3  # one time per profiled forward: a median with its spread
    assert any(k.generated and len(k.fx_nodes) > 1 for k in costs.kernels)  # inductor fused nodes into one kernel
    assert any(not k.generated for k in costs.kernels)  # and called ATen for the matmuls or convolutions
    shares = sum(sum(costs.node_us(g).values()) for g in range(len(costs.graphs)))
    assert shares == pytest.approx(costs.kernels_us)  # the nodes' shares add up to the kernels' time
    assert costs.kernels_us < costs.region.us  # the kernels run inside the compiled regions


def test_a_model_dynamo_captures_nothing_of_is_refused_in_one_sentence(menu_restored):
    session = Session()
    session.configure(add_model_file(str(ROOT / "tests/outside/moe_top1.py")), {})
    with pytest.raises(InputError, match="dynamo captured no graph of this model's forward"):
        kernel_costs(session.model, torch.tensor([encode(TEXT)]), repeats=1)


def test_inspect_kernels_reports_each_graph_of_a_model_that_breaks():
    # the early exit's data-dependent `if` breaks the forward into graphs: each kernel found in its own graph's call
    run = cli("inspect", "--model", "early_exit", "--set", "blocks=2", "--text", TEXT, "--kernels", "--json")
    assert run.returncode == 0, run.stderr
    kernels = json.loads(run.stdout)["kernels"]
    assert kernels["graphs"] > 1 and kernels["unmatched"] == []
    assert {k["graph"] for k in kernels["kernels"]} == set(range(kernels["graphs"]))
    assert sum(k["us"] for k in kernels["kernels"]) == pytest.approx(kernels["kernels_us"])


def test_a_notebooks_run_shows_the_kernels_of_a_library_architecture():
    from explorer.notebook import explore

    run = explore("gpt2", TEXT, layers=1, width=32)  # a model of the menu: its own process for the fresh compile
    try:
        shown = run.kernels()
    finally:
        run.workers.stop()
    assert "compiled afresh with inductor" in shown.text and shown.graph is not None
    assert shown.report["kernels"] and shown.report["unmatched"] == []
    assert any(k["generated"] for k in shown.report["kernels"]) and any(
        not k["generated"] for k in shown.report["kernels"])


def test_a_model_living_only_in_the_notebook_is_refused_not_reset():
    from explorer.views.kernels import kernels_update
    from explorer.workers.protocol import Here, Workers

    session = Session()
    with pytest.raises(InputError, match="lives only in this notebook"):
        next(kernels_update(session, Workers.on(Here())))  # a notebook object's: everything in the kernel's process
