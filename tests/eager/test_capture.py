"""Graph capture, module trace and diff on the real models."""

import pytest
import torch

from explorer.draw.layout import layout_graph
from explorer.eager.capture import capture_run, train_loss
from explorer.eager.diff import diff_graphs
from explorer.eager.graph import AutogradGraph, GraphNode, capture_graph
from explorer.eager.memory import param_bytes
from explorer.eager.trace import ModuleTrace
from models import build_model, make_config
from models.tokenizer import to_ids


def _model(name, **values):
    return build_model(name, make_config(name, values))


def _reachable(root) -> int:
    """The plain walk over grad_fn.next_functions that the capture must agree with."""
    seen, stack = {root}, [root]
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return len(seen)


@pytest.mark.parametrize("name", ["rnn", "transformer", "early_exit", "tree"])
@pytest.mark.parametrize("text", ["a", "Hello, world!", "x" * 120])
def test_node_count_equals_grad_fn_walk(name, text):
    model = _model(name)
    params = {id(p): n for n, p in model.named_parameters()}
    with ModuleTrace(model) as trace:
        loss = train_loss(model(to_ids(text)))
    graph = capture_graph(loss.grad_fn, trace, params)
    assert len(graph.nodes) == _reachable(loss.grad_fn)
    assert {n.param for n in graph.param_leaves} <= set(params.values())
    # Every edge joins two known nodes, and every op node was attributed to a module or the loss.
    ids = {n.id for n in graph.nodes}
    assert all(a in ids and b in ids for a, b in graph.edges)
    assert all(n.module for n in graph.nodes)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_unroll_count_equals_tokens(cell):
    for text in ("hi", "a somewhat longer input"):
        cap = capture_run(_model("rnn", cell=cell, layers=2, bidirectional=True), to_ids(text))
        n = len(text)
        assert cap.trace["layers.0.fwd"] == cap.trace["layers.0.bwd"] == n
        assert cap.trace["layers.1.fwd"] == n


def test_rnn_graph_grows_linearly_with_tokens():
    sizes = [len(capture_run(_model("rnn"), to_ids("x" * n)).graph.nodes) for n in (5, 10, 50)]
    per_token = (sizes[1] - sizes[0]) / 5
    assert per_token > 5
    assert sizes[2] - sizes[1] == per_token * 40


def _depth(trace: dict[str, int]) -> int:
    """How many blocks ran: the early-exit model's `blocks.N` modules that were called."""
    return sum(1 for k in trace if k.startswith("blocks.") and k.count(".") == 1)


def test_exit_depth_moves_with_threshold():
    ids = to_ids("The cat sat on the mat.")
    thresholds = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1.0)
    depths = [_depth(capture_run(_model("early_exit", threshold=t, blocks=6), ids).trace) for t in thresholds]
    assert depths[0] == 1  # threshold 0: the first head is always confident enough
    assert depths[-1] == 6  # threshold 1: never exit early
    assert depths == sorted(depths)
    assert len(set(depths)) >= 3, depths


def test_exit_depth_depends_on_the_input():
    model = _model("early_exit", threshold=0.6)
    texts = ["a", "Hello", "The cat sat on the mat.", "граф 图 👋", "zzzzzzzzzzzzzzzz", "1234567890"]
    depths = {_depth(capture_run(model, to_ids(t)).trace) for t in texts}
    assert len(depths) >= 2, depths


@pytest.mark.parametrize("bracketing", ["text", "balanced", "left", "right"])
def test_tree_size_equals_tokens(bracketing):
    for text in ("a", "ab cd.", "Hello, world! 👋"):
        cap = capture_run(_model("tree", bracketing=bracketing), to_ids(text))
        n = len(text.encode())
        assert cap.trace["leaf"] == n
        assert cap.trace.get("compose", 0) == n - 1


def test_transformer_graph_shows_real_ops():
    ops = capture_run(_model("transformer"), to_ids("Hello")).graph.op_counts()
    assert ops["SoftmaxBackward0"] == 2  # one per layer, written out
    assert ops["NativeLayerNormBackward0"] == 5
    sdpa = capture_run(_model("transformer", attention="sdpa"), to_ids("Hello")).graph.op_counts()
    assert "SoftmaxBackward0" not in sdpa


def test_nodes_carry_module_shape_and_saved_tensors():
    cap = capture_run(_model("rnn", hidden=16), to_ids("abc"))
    cell_nodes = [n for n in cap.graph.nodes if n.module == "layers.0.fwd" and not n.is_param]
    assert {n.call for n in cell_nodes} == {0, 1, 2}
    assert all(n.shape is not None and n.dtype == "float32" for n in cell_nodes)
    assert any(n.saved_bytes > 0 for n in cell_nodes)
    head = [n for n in cap.graph.nodes if n.module == "head" and n.op == "AddmmBackward0"]
    assert head and head[0].shape == (1, 4)
    assert any(s.is_param for s in head[0].saved)


def test_a_graph_thousands_of_nodes_deep_is_walked_without_recursion():
    # How fast it is, is bench/update_latency.py's to measure; here: a 500-step unroll (~8,000 nodes, thousands
    # deep, past Python's recursion limit) is walked completely.
    model = _model("rnn")
    ids = to_ids("x" * 500)
    params = {id(p): n for n, p in model.named_parameters()}
    with ModuleTrace(model) as trace:
        loss = train_loss(model(ids))
    graph = capture_graph(loss.grad_fn, trace, params)
    assert len(graph.nodes) == _reachable(loss.grad_fn) > 2000


def test_diff_of_two_inputs_counts_the_extra_time_steps():
    model = _model("rnn")
    a = capture_run(model, to_ids("abcde")).graph
    b = capture_run(model, to_ids("abcdefgh")).graph
    d = diff_graphs(a, b, "A -> B")
    per_step = sum(1 for n in b.nodes if n.module == "layers.0.fwd" and n.call == 0 and not n.is_param)
    assert d.nodes_added == 3 * per_step
    assert d.nodes_removed == 0
    assert [m.module for m in d.modules] == ["layers.0.fwd"]
    assert len(d.added_ids) == d.nodes_added
    assert {b.node(i).call for i in d.added_ids} == {5, 6, 7}
    back = diff_graphs(b, a, "B -> A")
    assert (back.nodes_added, back.nodes_removed) == (0, d.nodes_added)
    assert "layers.0.fwd" in d.text()


def test_diff_of_an_architecture_change():
    ids = to_ids("hello")
    a = capture_run(_model("rnn", layers=1), ids).graph
    b = capture_run(_model("rnn", layers=2), ids).graph
    d = diff_graphs(a, b, "layers 1 -> 2")
    assert "layers.1.fwd" in {m.module for m in d.modules}
    assert d.nodes_added > 0


def test_layout_collapses_big_graphs_but_keeps_counts():
    cap = capture_run(_model("rnn"), to_ids("x" * 200))
    lay = layout_graph(cap.graph, max_nodes=300)
    assert lay.collapsed and len(lay.nodes) <= 300
    assert lay.total_nodes == len(cap.graph.nodes)
    assert sum(len(d.members) for d in lay.nodes) == len(cap.graph.nodes)
    small = layout_graph(capture_run(_model("rnn"), to_ids("hi")).graph, max_nodes=300)
    assert not small.collapsed
    # Forward runs left to right: every parameter leaf sits left of the loss node.
    loss_x = next(d.x for d in small.nodes if d.members[0].id == 0)
    assert all(d.x < loss_x for d in small.nodes if d.is_param)


def test_saved_bytes_exclude_parameters_and_count_a_shared_storage_once():
    model = _model("rnn")
    cap = capture_run(model, to_ids("hello"))
    per_reference = sum(s.bytes for n in cap.graph.nodes for s in n.saved if not s.is_param)
    # Every step's hidden state is saved by more than one node: counted once, the total is smaller.
    assert 0 < cap.saved_bytes < per_reference
    # Each cell saves its weights for backward; were they counted, 5 tokens of activations could not stay below
    # the parameters' own size.
    assert any(s.is_param for n in cap.graph.nodes for s in n.saved)
    assert cap.saved_bytes < param_bytes(model)
    assert torch.is_grad_enabled()


def test_diff_marks_the_copies_created_last_not_those_walked_last():
    # Same module, op and call; the walk (id) visits the newer node first: creation order must decide.
    def node(i, seq):
        return GraphNode(i, "AddBackward0", "cell", 0, (1,), "float32", seq=seq)

    before = AutogradGraph([node(0, 10)], [], 0)
    after = AutogradGraph([node(0, 11), node(1, 10), node(2, 12)], [(1, 0), (2, 0)], 0)
    assert diff_graphs(before, after, "x").added_ids == {0, 2}


def test_the_train_step_graph_is_drawn_in_train_mode_and_leaves_the_model_as_inference_reads_it():
    """A model with dropout and batch norm (the shipped image example, with a dropout added): the graph of its train
    step has the dropout nodes eval mode leaves out, drawn the same for the same input (seeded); the model stays in
    eval mode, and batch norm's running statistics, which a train-mode step moves, are as they were, so the next
    forward is unchanged."""
    from explorer.eager.capture import training
    from explorer.sources.userfile import load

    source = load("examples/image_cnn.py")
    model = source.build(source.config())  # in eval mode, as every model source builds it
    model.model.blocks.append(torch.nn.Dropout2d(0.2))
    model.eval()
    ids = to_ids("The cat sat on the mat.")
    with torch.no_grad():
        before = model(ids)
    with ModuleTrace(model) as trace:
        eval_nodes = len(capture_graph(train_loss(model(ids)).grad_fn, trace, {}).nodes)
    first, again = capture_run(model, ids), capture_run(model, ids)
    names = [n.op for n in first.graph.nodes]
    dropout = [n.op for n in first.graph.nodes if n.module == "model.blocks.2"]  # the appended Dropout2d's node
    assert len(first.graph.nodes) == eval_nodes + 1 and dropout == ["MulBackward0"], names
    assert [n.op for n in again.graph.nodes] == names  # seeded: the same draws, the same graph
    with training(model):
        for _ in range(3):
            train_loss(model(ids)).backward()
    assert not model.training and not any(m.training for m in model.modules())
    wrapper = torch.nn.Sequential(model)  # made in train mode around the eval model, as generation's step wrapper
    capture_run(wrapper, ids)
    assert wrapper.training and not any(m.training for m in model.modules())  # each module back in its own mode
    with torch.no_grad():
        assert torch.equal(model(ids), before)  # running statistics restored: inference reads what it read


def test_a_capture_accepted_under_the_bound_is_still_stopped_at_it_with_a_message():
    """The estimate lets a run start; the bound stops it. A bound already passed stops the forward at its first
    module call whatever this machine's speed, with the message a person reads, and nothing is left hooked."""
    from explorer.eager.trace import PastBound

    model = _model("rnn")
    with pytest.raises(PastBound, match=r"stopped after 0 s, at call 1 of the model's modules \(model\): past "
                                        r"GE_MAX_RUN_S"):
        capture_run(model, to_ids("x" * 64), max_s=0.0)
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in model.modules())
    assert not model.training  # and back in eval mode
    assert len(capture_run(model, to_ids("x" * 64), max_s=60.0).graph.nodes) > 0  # the same run within its bound
