"""Where the time went: the profiler's operators charged to the graph's nodes (by autograd's sequence numbers),
every operation node costed forward and backward, each step split with nothing lost or counted twice, rolled up per
module and per line, on the zoo, a library architecture and a model this project did not write; an operator's file
is profiled in its worker; an input whose profiled step would take too long is refused before it runs."""

import statistics

import pytest
import torch
from torch import nn

from explorer.core.errors import InputError
from explorer.eager.capture import train_loss, training
from explorer.eager.costs import BACK_TO_BACK, back_to_back, profile_costs, repeats_within
from explorer.eager.graph import walk
from explorer.runs import session as sessions
from explorer.runs.session import Session
from explorer.sources.registry import add_model_file
from explorer.views.costs import line_rows, module_rows, top_rows
from explorer.views.playground import costs_view, update
from explorer.workers.process import WorkerProcess
from tests.helpers import ROOT

TEXT = "Where did the time go, node by node?"


@pytest.mark.parametrize("model", ["rnn", "transformer", "tree", "early_exit", "gpt2", "tests/outside/moe_top1.py",
                                   "tests/outside/tied_frozen.py"])
def test_every_operation_node_is_costed_forward_and_backward_and_the_rollups_hold_them_all(model, menu_restored):
    name = add_model_file(str(ROOT / model)) if model.endswith(".py") else model
    session = Session()
    session.configure(name, {"layers": 1, "width": 32} if model == "gpt2" else {})
    graph = session.capture(TEXT).fixed.capture.graph
    costs = session.costs()
    lines = session.lines()
    ops = {n.id for n in graph.nodes if not n.is_param}
    params = {n.id for n in graph.nodes if n.is_param}
    assert costs.matches_graph and set(costs.nodes) == ops | params and costs.params == params
    assert costs.repeats == 5
    # each node's forward operators and its backward function were found (charged by sequence number), and each
    # parameter's accumulation (by the order the engine ran them), with its share of zero_grad, in its backward
    assert all(costs.nodes[i].forward_us > 0 and costs.nodes[i].backward_us > 0 for i in ops)
    assert all(costs.nodes[i].forward_us == 0 and costs.nodes[i].backward_us > statistics.mean(costs.zero_grad_ms)
               * 1e3 / len(params) for i in params)
    assert costs.other_ops_ms == pytest.approx(costs.other_forward_ops_ms)  # no backward time is of no node
    # each repeat's step is split with nothing lost or counted twice: the nodes (the parameters' holding zero_grad),
    # the operators of no node and what ran after the last operator add up to its profiled wall time (scaled to the
    # plain step's)
    for *parts, wall in zip(costs.forward_ops_ms, costs.backward_ops_ms, costs.other_ops_ms, costs.outside_ms,
                            costs.step_ms, strict=True):
        assert min(parts) >= 0 and sum(parts) == pytest.approx(wall * costs.scale, rel=1e-6)
    # each plain step's forward and loss, timed within it: what the nodes' forward is set against; the operators of
    # no node split the same way (the forward's part of them, never more than all of them)
    assert all(0 < f < step for f, step in zip(costs.plain_forward_ms, costs.plain_ms, strict=True))
    assert all(0 <= f <= o for f, o in zip(costs.other_forward_ops_ms, costs.other_ops_ms, strict=True))
    assert sum(costs.nodes_ms()) == pytest.approx(statistics.mean(map(sum, zip(
        costs.forward_ops_ms, costs.backward_ops_ms, strict=True))), rel=1e-6)  # the nodes' means sum to the steps'
    # the inference forward the same way: its nodes' shares, its operators of no node (or matched to none) and what
    # ran after its last operator add up to each profiled inference forward (scaled to the plain one's)
    for *parts, wall in zip(costs.inference_ops_ms, costs.other_inference_ms, costs.inference_outside_ms,
                            costs.inference_ms, strict=True):
        assert min(parts) >= 0 and sum(parts) == pytest.approx(wall * costs.inference_scale, rel=1e-6)
    assert costs.nodes_inference_ms() == pytest.approx(statistics.mean(costs.inference_ops_ms), rel=1e-6)
    matched, tops = costs.matched_ops
    assert 0 < matched <= tops
    # the forward's operators of no node by the model's line that ran them: lines that ran, within the forward's
    # operators of no node (the rest are the loss's)
    ran = {f"{s.file}:{s.line}" for s in lines.lines if s.hits}
    assert set(costs.other_lines) <= ran
    assert sum(costs.other_lines.values()) <= statistics.mean(costs.other_forward_ops_ms) * (1 + 1e-6)
    for rows in (module_rows(costs, graph), line_rows(costs, lines)):
        assert sum(r[1] for r in rows) == len(costs.nodes)  # every node in exactly one module, one line (or the loss,
        # or the parameters')
    assert len(top_rows(costs, graph, lines)) == min(10, len(costs.nodes))


def test_a_mixture_of_experts_router_whose_node_the_loss_never_reaches_is_charged_to_its_line(menu_restored):
    """The router's linear layer makes a node the loss never reaches (its argmax passes no gradient), so no node of
    the graph holds its time: the time goes to its line, beside the nodes' (it was said only as the step's
    operators of no node), and so does the zeros_like after it (no number at all)."""
    session = Session()
    session.configure(add_model_file(str(ROOT / "tests/outside/moe_top1.py")), {})
    session.capture(TEXT)
    costs, lines = session.costs(), session.lines()
    router, zeros = "tests/outside/moe_top1.py:19", "tests/outside/moe_top1.py:20"
    assert costs.other_lines.get(router, 0) > 0 and costs.other_lines.get(zeros, 0) > 0
    row = next(r for r in line_rows(costs, lines) if r[0] == router)
    assert row[1] == 0 and row[-1] == round(costs.other_lines[router], 3)  # no node of the graph made there


def test_the_playground_view_colours_the_graph_by_time_and_sets_the_sums_against_the_card():
    session = Session()
    list(update(session, "rnn", TEXT, "", {}))
    view = costs_view(session)
    heat = [t for t in view.graph.data if (t.name or "").startswith("time per node")]
    assert len(heat) == 1 and heat[0].marker.showscale and max(heat[0].marker.color) > 0
    step, forward = session.last.train_step.median_ms, session.last.forward.median_ms
    assert f"The cards, timed apart: the train step {step:.2f} ms" in view.said
    assert f"the forward {forward:.2f} ms, the nodes' inference sum" in view.said
    # the unrolled cell's module: sixteen nodes per token and its four parameters' (the rows go by time, which a busy
    # spell of the machine can turn over: the loss's few nodes came first once, in a loaded suite)
    assert next(r for r in view.modules if r[0] == "layers.0.fwd")[1] == len(TEXT.encode()) * 16 + 4
    step = next(r for r in view.lines if r[0] == "models/rnn.py:54")
    assert step[1] == len(TEXT.encode()) * 16  # the time step's line: sixteen nodes per token
    assert view.report["repeats"] == 5 and len(view.report["step_ms"]) == len(view.report["plain_ms"]) == 5
    forward = statistics.mean(view.report["plain_forward_ms"])
    assert f"of the step's forward and loss timed in this pass ({forward:.2f} ms, recording the graph" in view.said


def test_an_operators_file_is_profiled_in_its_worker_and_a_step_too_long_is_refused(menu_restored, monkeypatch):
    worker = WorkerProcess(name="capture")
    try:
        session = Session(isolate=lambda _: worker)
        session.configure(add_model_file(str(ROOT / "tests/outside/moe_top1.py")), {})
        session.capture(TEXT)
        assert session.costs().matches_graph and not session.holds_model
    finally:
        worker.stop()
    session = Session()
    session.configure("rnn", {})
    session.capture(TEXT)
    monkeypatch.setattr(sessions, "MAX_RUN_S", 1e-6)
    with pytest.raises(InputError, match=r"Profiling this input's train step would take about .* over GE_MAX_RUN_S"):
        session.costs()


def test_a_long_step_is_timed_plain_once_after_its_untimed_one_so_a_half_second_step_still_fits_ten_seconds():
    """Plain runs in a row (as the card's timer runs them) only where a cold cache would show: a step past PLAIN_S is
    timed once after its untimed one, so the pass fits what it fitted before they ran in a row."""
    assert back_to_back(0.002) == BACK_TO_BACK and back_to_back(0.02) == 2 and back_to_back(0.3) == 1
    assert repeats_within(0.002, 10, "GE_MAX_RUN_S") == 5 and repeats_within(0.5, 10, "GE_MAX_RUN_S") == 1
    with pytest.raises(InputError, match="over GE_MAX_RUN_S = 10 s"):
        repeats_within(0.6, 10, "GE_MAX_RUN_S")


class _TrainOnly(nn.Module):
    """A layer that runs in train mode only (in eval mode, the inference forward's, it is skipped), dropout beside."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.first, self.drop = nn.Embedding(256, 16), nn.Linear(16, 16), nn.Dropout(0.5)
        self.train_only, self.second = nn.Linear(16, 16), nn.Linear(16, 256)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.first(self.embed(ids)))
        if self.training:
            x = self.train_only(x).relu()
        return self.second(x)


def test_the_inference_forward_is_matched_in_order_to_the_train_steps_nodes_and_what_it_skips_takes_none():
    model, ids = _TrainOnly().eval(), torch.tensor([list(TEXT.encode())])
    costs = profile_costs(model, ids, repeats=2)
    with training(model):  # the graph as the pass drew it: in train mode
        order, _ = walk(train_loss(model(ids), model).grad_fn)
    modules = {nid: fn.name() for nid, fn in enumerate(order)}
    took = {modules[n] for n, c in costs.nodes.items() if c.inference_us > 0}
    # the embedding, the linear layers run in eval mode and dropout (called in eval mode too: its Python and an
    # operator that returns its input) take the inference forward's time; the train-only layer's ReLU and the
    # loss's sum none: the eval forward never ran them
    assert {"EmbeddingBackward0", "AddmmBackward0", "MulBackward0"} <= took
    assert not took & {"ReluBackward0", "SumBackward0"}
    # the three linear layers' nodes, as walked back from the loss: the last, the train-only one, the first; the
    # train-only one's none (the eval forward's second linear is the last one, told apart by its inputs' shapes)
    last, train_only, first = (n for n, name in modules.items() if name == "AddmmBackward0")
    assert costs.nodes[last].inference_us > 0 and costs.nodes[first].inference_us > 0
    assert costs.nodes[train_only].inference_us == 0
    matched, tops = costs.matched_ops
    assert (matched, tops) == (4, 4)  # embedding, linear, dropout, linear: each matched to its train counterpart
    assert not model.training  # the pass left the model in its own mode
