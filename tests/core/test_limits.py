"""Limits known before anything runs: parameter counts and activation-memory estimates, and what is refused."""

import pytest

from explorer.core import budget
from explorer.core.batches import pad_ids
from explorer.core.errors import InputError
from explorer.core.inputs import text_of_length, tokenize
from explorer.eager.capture import capture_run, train_loss
from explorer.eager.graph import capture_graph
from explorer.eager.trace import ModuleTrace
from explorer.labs.batching.lab import lab_result
from explorer.labs.batching.strategies import nested
from explorer.runs.session import Session
from explorer.sources import registry
from models import ZOO, build_model, make_config, param_count

CASES = [
    ("rnn", {}), ("rnn", {"cell": "lstm", "layers": 2, "hidden": 128, "embed": 64, "bidirectional": True}),
    ("rnn", {"cell": "rnn", "hidden": 8}), ("transformer", {}), ("transformer", {"attention": "sdpa"}),
    ("transformer", {"width": 128, "heads": 8, "ffn_ratio": 2, "layers": 3, "norm": "post"}),
    ("early_exit", {"threshold": 1.0}), ("early_exit", {"threshold": 1.0, "width": 128, "blocks": 3}),
    ("tree", {}), ("tree", {"cell": "rnn", "hidden": 16, "bracketing": "left"}),
]


@pytest.mark.parametrize(("name", "values"), CASES)
def test_parameter_count_on_meta_is_exact(name, values):
    cfg = make_config(name, values)
    assert param_count(name, cfg) == sum(p.numel() for p in build_model(name, cfg).parameters())


@pytest.mark.parametrize(("name", "values"), CASES)
@pytest.mark.parametrize("tokens", [7, 64, 200])
def test_activation_estimate_bounds_the_measured_saved_bytes(name, values, tokens):
    cfg = make_config(name, values)
    measured = capture_run(build_model(name, cfg), tokenize(text_of_length("Hello world, a b. ", tokens)).ids)
    estimate = ZOO[name].activation_bytes(cfg, tokens, 1)
    # An upper bound, and a useful one: within 4x of what a real train step saved.
    assert measured.saved_bytes <= estimate <= 4 * measured.saved_bytes, (measured.saved_bytes, estimate)


@pytest.mark.parametrize("name", ["rnn", "transformer"])
def test_activation_estimate_bounds_a_padded_batch(name):
    model = build_model(name, make_config(name, {"bidirectional": True} if name == "rnn" else {}))
    ids, lengths = pad_ids([[65] * 30, [66] * 5, [67] * 17])
    with ModuleTrace(model) as trace:
        loss = train_loss(model(ids, lengths))
    saved = capture_graph(loss.grad_fn, trace, {}).saved_activation_bytes()
    estimate = registry.batch_activation_bytes(model, [tuple(ids.shape)])
    assert saved <= estimate <= 4 * saved


def test_over_the_limits_is_refused_and_the_session_keeps_its_model(monkeypatch):
    session = Session()
    session.configure("transformer", {"width": 64})
    session.run("keep me")
    monkeypatch.setattr(registry, "MAX_PARAMS", 200_000)
    with pytest.raises(InputError, match=r"has [\d,]+ parameters; the limit is 200,000 \(GE_MAX_PARAMS\)"):
        session.configure("transformer", {"width": 256})
    monkeypatch.setattr(registry, "MAX_PARAMS", 64_000_000)
    monkeypatch.setattr(registry, "MAX_ACTIVATION_BYTES", 50 * 2**20)
    with pytest.raises(InputError, match=r"activations for backward on one input of 512 tokens \(the longest any "
                                         r"run of this server takes\); the limit is 50 MiB"):
        session.configure("transformer", {"layers": 12})
    assert session.model_name == "transformer" and session.config.width == 64 and session.config.layers == 2
    assert len(session.history) == 1 and session.last.input.text == "keep me"


def test_a_lab_strategy_over_the_memory_limit_is_skipped_with_a_note(monkeypatch):
    model = build_model("transformer", make_config("transformer"))
    texts = ["x" * 300] + ["short one"] * 40
    monkeypatch.setattr(budget, "MAX_ACTIVATION_BYTES", 60 * 2**20)  # pad: 41 x 300 tokens is ~120 MiB
    lab = lab_result(model, texts, budget_scale=0.05)
    assert not lab.strategy("pad").supported and "over the memory limit" in lab.strategy("pad").note
    assert lab.strategy("bucket").supported and lab.strategy("loop").supported
    monkeypatch.setattr(budget, "MAX_ACTIVATION_BYTES", 2**20)
    with pytest.raises(InputError, match="This batch is too big"):
        lab_result(model, texts, budget_scale=0.05)


def test_huge_payloads_are_refused_before_any_work():
    with pytest.raises(InputError, match="characters; the limit is"):
        tokenize("x" * 5_000_000)


def test_a_jagged_batch_is_held_to_the_memory_limit_as_unpadded_rows():
    model = build_model("transformer", make_config("transformer", {"attention": "sdpa"}))
    seqs = [[65] * 30, [66] * 5, [67] * 17]
    estimate = ZOO["transformer"].activation_bytes
    assert nested(model, seqs, 32).activation_bytes(model) == sum(estimate(model.cfg, len(s), 1) for s in seqs)
