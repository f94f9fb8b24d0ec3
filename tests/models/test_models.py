"""Every zoo model across its config corners; determinism; config validation; the tokenizer."""

import random

import pytest
import torch

from explorer.eager.trace import ModuleTrace
from models import ZOO, ConfigError, build_model, make_config
from models.config import knobs
from models.heads import NUM_CLASSES
from models.tokenizer import VOCAB_SIZE, encode, to_ids, token_labels
from models.tree import BRACKETINGS, TreeConfig, bracket, bracketing_text

TEXT = "Hi, you 👋!"


def _corners():
    """Each knob at its minimum, its maximum and each choice, the others at their defaults."""
    for name, e in ZOO.items():
        for k in e.knobs():
            if k.name == "seed":
                continue
            values = list(k.choices) if k.choices else [True, False] if k.type == "bool" else [k.min, k.max]
            for v in values:
                yield name, {k.name: v}


@pytest.mark.parametrize(("model", "values"), list(_corners()), ids=lambda x: str(x))
def test_config_corner_runs_forward_and_backward(model, values):
    if model in ("transformer", "early_exit") and "width" in values:
        values["heads"] = 1  # the width bounds are multiples of 1 head
    cfg = make_config(model, values)
    m = build_model(model, cfg)
    logits = m(to_ids(TEXT))
    assert logits.shape == (1, VOCAB_SIZE if model == "decoder" else NUM_CLASSES)  # the decoder: the next byte
    assert torch.isfinite(logits).all()
    logits.sum().backward()
    used = [p for p in m.parameters() if p.grad is not None]
    assert used, "backward reached no parameter"


@pytest.mark.parametrize("model", list(ZOO))
def test_deterministic_for_a_seed(model):
    ids = to_ids(TEXT)
    a = build_model(model, make_config(model))(ids)
    b = build_model(model, make_config(model))(ids)
    c = build_model(model, make_config(model, {"seed": 1}))(ids)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_building_does_not_touch_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    build_model("rnn", make_config("rnn"))
    assert torch.equal(torch.rand(1), expected)


@pytest.mark.parametrize(
    ("model", "values", "message"),
    [
        ("rnn", {"layers": 0}, "layers must be between 1 and 4"),
        ("rnn", {"layers": 2.5}, "whole number"),
        ("rnn", {"hidden": "wide"}, "must be a number"),
        ("rnn", {"hidden": float("nan")}, "finite"),
        ("rnn", {"cell": "transformer"}, "must be one of rnn, gru, lstm"),
        ("rnn", {"depth": 3}, "unknown config field 'depth'"),
        ("rnn", {"bidirectional": "maybe"}, "true or false"),
        ("transformer", {"width": 64, "heads": 5}, "multiple of heads"),
        ("transformer", {"layers": True}, "must be a number"),
        ("nope", {}, "unknown model 'nope'"),
    ],
)
def test_bad_config_is_a_clear_error(model, values, message):
    with pytest.raises(ConfigError, match=message):
        make_config(model, values)


def test_cli_strings_are_coerced():
    cfg = make_config("rnn", {"layers": "2", "bidirectional": "true", "cell": "lstm"})
    assert (cfg.layers, cfg.bidirectional, cfg.cell) == (2, True, "lstm")


def test_every_knob_has_help_and_a_range_or_choices():
    for e in ZOO.values():
        for k in knobs(e.config_cls):
            assert k.help
            assert k.type in ("bool",) or k.choices or (k.min is not None and k.max is not None)


def test_byte_tokenizer_accepts_any_text():
    assert encode("a") == [97]
    assert len(encode("👋")) == 4
    assert len(encode("граф")) == 8
    assert token_labels("é!") == ["é", "+a9", "!"]
    with pytest.raises(UnicodeEncodeError):
        encode("\ud800")


def _leaves(tree):
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, int):
            out.append(node)
        else:
            stack += [node[1], node[0]]
    return out


@pytest.mark.parametrize("mode", list(BRACKETINGS))
def test_bracketing_covers_every_token_in_order(mode):
    rng = random.Random(0)
    for _ in range(50):
        text = "".join(rng.choice("ab ,.!é👋") for _ in range(rng.randint(1, 60)))
        ids = encode(text)
        assert _leaves(bracket(ids, mode)) == list(range(len(ids)))


def test_text_bracketing_follows_words_and_punctuation():
    # "ab cd." -> clause ((a b) space) ((c d) .) right-branching over the two words.
    tree = bracket(encode("ab cd."), "text")
    assert tree == (((0, 1), 2), ((3, 4), 5))


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_the_scan_loop_computes_what_the_python_loop_does(cell, bidirectional):
    cfg = {"cell": cell, "bidirectional": bidirectional, "layers": 2}
    python = build_model("rnn", make_config("rnn", cfg))
    scan = build_model("rnn", make_config("rnn", {**cfg, "loop": "scan"}))
    assert all(torch.equal(a, b) for a, b in zip(python.state_dict().values(), scan.state_dict().values(),
                                                  strict=True))  # the same weights: only the loop differs
    for text in ("a", "Hello there", "x" * 70):
        with torch.no_grad():
            assert torch.allclose(python(to_ids(text)), scan(to_ids(text)), atol=1e-6)


def test_the_cond_exit_computes_what_the_python_if_does_at_every_depth():
    depths = set()
    for threshold in (0.3, 0.6, 0.9):
        python = build_model("early_exit", make_config("early_exit", {"threshold": threshold}))
        cond = build_model("early_exit", make_config("early_exit", {"threshold": threshold, "exit_with": "cond"}))
        for text in ("a", "Hello there", "x" * 40, "The cat sat on the mat."):
            with torch.no_grad(), ModuleTrace(python) as trace:
                want = python(to_ids(text))
            depths.add(sum(1 for k in trace.counts() if k.startswith("blocks.") and k.count(".") == 1))
            with torch.no_grad():
                assert torch.allclose(cond(to_ids(text)), want, atol=1e-6)
    assert len(depths) >= 2  # the inputs above exit at different depths: the cond really chose


def test_the_trees_bracketing_is_written_with_its_words_whole():
    assert bracketing_text(TreeConfig(bracketing="right"), encode("a b c")) == "(a (␣ (b c)))"
    assert bracketing_text(TreeConfig(bracketing="left"), encode("ab cd")) == "((ab c) d)"  # bytes, not words
    text = "The cat sat on the mat, and then it slept."
    said = bracketing_text(TreeConfig(), encode(text))
    assert said.startswith("((The (cat (sat (on (the mat,")  # words right-branching within the first clause
    assert said.translate(str.maketrans("", "", "() ␣")) == text.replace(" ", "")  # every byte, in order
