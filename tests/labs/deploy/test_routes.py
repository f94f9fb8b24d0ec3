"""Every route on every model of the zoo at its default config gives the outcome this machine showed (see
../shared/FACTS.md and bench/RESULTS-deploy.md): the tests pin down the cases the lab exists to show."""

from pathlib import Path

import pytest
import torch

from explorer.core.errors import InputError
from explorer.core.paths import PROJECT
from explorer.labs.deploy.checks import check_inputs, parse_lengths
from explorer.labs.deploy.results import LOUD, SILENT, TOLERANCE, WORKS
from explorer.labs.deploy.routes import DECODE_ROUTES, DECODE_STEPS, ROUTES, Setting, check_against_eager
from models import build_model, make_config
from tests.helpers import early_exit_branch, source_line

TEXT = "The cat sat on the mat."  # 23 tokens
LENGTHS = [5, 60]


@pytest.fixture(scope="module")
def routes(tmp_path_factory):
    """route -> model -> result, for the fast routes (trace, script, both exports, ONNX) on every model."""
    out = {}
    for model in ("rnn", "transformer", "early_exit", "tree"):
        m = build_model(model, make_config(model))
        setting = Setting(m, check_inputs(model, m, TEXT, LENGTHS), tmp_path_factory.mktemp(model), lambda _: None)
        for route in ("jit.trace", "jit.script", "export", "export (Dim.AUTO)", "onnx"):
            out.setdefault(route, {})[model] = ROUTES[route](setting)
    return out


def test_the_checks_cover_other_lengths_and_another_text_of_the_same_length():
    m = build_model("early_exit", make_config("early_exit"))
    inputs = check_inputs("early_exit", m, TEXT, LENGTHS)
    assert [len(i.tokens) for i in inputs] == [23, 5, 60, 23]
    assert inputs[0].label.endswith("(the current input)")
    assert inputs[3].tokens != inputs[0].tokens and "another text" in inputs[3].label


@pytest.mark.parametrize(("raw", "message"), [("8,abc", "whole numbers"), ("0,8", "between 1 and"),
                                                ("", "give 1 to"), ("1,2,3,4,5,6,7,8,9", "give 1 to")])
def test_bad_lengths_are_refused_with_a_message(raw, message):
    with pytest.raises(InputError, match=message):
        parse_lengths(raw)


def test_the_transformer_survives_every_fast_route_but_script(routes):
    for route in ("jit.trace", "export", "export (Dim.AUTO)", "onnx"):
        r = routes[route]["transformer"]
        assert r.outcome == WORKS, (route, r.first_problem())
        assert all(c.max_abs_diff <= TOLERANCE for c in r.checks) and len(r.checks) == 4
        assert r.artefact_bytes > 0 and r.latency is not None and r.eager is not None
    assert "VR[2, 512]" in routes["export"]["transformer"].notes[0]  # the declared range of the sequence length
    assert "int_oo" in routes["export (Dim.AUTO)"]["transformer"].notes[0]
    code = routes["export"]["transformer"].graph_code
    assert "models/transformer.py" in code and PROJECT not in code and "site-packages" not in code  # relative paths
    assert "'seq'" in routes["onnx"]["transformer"].notes[0]  # a symbolic dimension in the ONNX file
    script = routes["jit.script"]["transformer"]
    assert script.outcome == LOUD and script.where.startswith("models/transformer.py:")
    assert any(w.category == "DeprecationWarning" for w in script.warnings)


def test_a_trace_of_the_rnn_refuses_other_lengths_without_having_warned(routes):
    r = routes["jit.trace"]["rnn"]
    assert r.outcome == LOUD and not r.error
    assert [c.correct for c in r.checks] == [True, False, False, True]  # right at 23 tokens only
    assert "Expected 23 elements in a list but found 5" in r.checks[1].error
    assert not any(w.category == "TracerWarning" for w in r.warnings)  # nothing said the loop was frozen


def test_a_trace_of_early_exit_is_silently_wrong_and_names_the_branch(routes):
    r = routes["jit.trace"]["early_exit"]
    assert r.outcome == SILENT
    assert any(c.error == "" and c.max_abs_diff > 0.1 for c in r.checks)  # no error, a wrong answer
    assert any(w.category == "TracerWarning" and w.where.startswith(early_exit_branch()) for w in r.warnings)


def test_a_trace_of_the_tree_is_silently_wrong_even_at_the_same_length(routes):
    r = routes["jit.trace"]["tree"]
    other_text = r.checks[-1]
    assert r.outcome == SILENT and other_text.tokens == 23 and other_text.error == ""
    assert other_text.max_abs_diff > TOLERANCE  # another text, the same length: the frozen bracketing is wrong


def test_export_refuses_the_rnn_loop_and_auto_freezes_it_to_one_length(routes):
    assert routes["export"]["rnn"].outcome == LOUD
    assert "Constraints violated" in routes["export"]["rnn"].error
    auto = routes["export (Dim.AUTO)"]["rnn"]
    assert auto.outcome == LOUD and "static" in auto.notes[0]
    assert "Guard failed" in auto.checks[1].error


def test_onnx_exports_the_rnn_for_one_length_without_a_word_and_runtime_refuses_the_others(routes):
    r = routes["onnx"]["rnn"]
    assert r.error == "" and not r.warnings and "[1, 23]: fixed" in r.notes[0]
    assert r.checks[0].correct and "INVALID_ARGUMENT" in r.checks[1].error


@pytest.mark.parametrize(("model", "line"), [("early_exit", early_exit_branch()),
                                             ("tree", source_line("models/tree.py", "0x80 <= b < 0xC0"))])
def test_export_of_data_dependent_control_flow_fails_naming_the_users_line(routes, model, line):
    for route in ("export", "export (Dim.AUTO)"):
        r = routes[route][model]
        assert r.outcome == LOUD and "GuardOnDataDependentSymNode" in r.error and r.where.startswith(line)
    assert routes["onnx"][model].outcome == LOUD


def test_the_scan_rnn_exports_with_a_dynamic_length_and_runs_in_onnx_runtime(tmp_path):
    m = build_model("rnn", make_config("rnn", {"loop": "scan"}))
    setting = Setting(m, check_inputs("rnn", m, TEXT, LENGTHS), tmp_path, lambda _: None)
    for route in ("export", "onnx"):
        r = ROUTES[route](setting)
        assert r.outcome == WORKS, (route, r.first_problem())
        assert len(r.checks) == 4 and all(c.correct for c in r.checks)


@pytest.mark.slow
def test_the_cond_early_exit_exports_and_matches_eager_at_every_length(tmp_path):
    # Two blocks: one cond (the default's six nest five, and export time grows with them: bench/RESULTS-deploy.md)
    m = build_model("early_exit", make_config("early_exit", {"exit_with": "cond", "blocks": 2}))
    setting = Setting(m, check_inputs("early_exit", m, TEXT, LENGTHS), tmp_path, lambda _: None)
    r = ROUTES["export"](setting)
    assert r.outcome == WORKS, r.first_problem()
    assert any("cond" in op for op in r.graph_ops)  # the decision is in the graph, not baked in
    assert all(c.correct for c in r.checks)


@pytest.mark.slow
def test_aoti_packages_the_transformer_and_runs_past_its_declared_maximum(tmp_path):
    m = build_model("transformer", make_config("transformer"))
    setting = Setting(m, check_inputs("transformer", m, TEXT, LENGTHS), tmp_path, lambda _: None)
    r = ROUTES["aoti"](setting)
    assert r.outcome == WORKS, r.first_problem()
    assert any("ran without a bound check" in n for n in r.notes)
    assert r.artefact_bytes > 0 and r.speedup is not None


def test_aoti_is_skipped_with_the_reason_when_export_fails(tmp_path):
    m = build_model("early_exit", make_config("early_exit"))
    r = ROUTES["aoti"](Setting(m, check_inputs("early_exit", m, TEXT, LENGTHS), tmp_path, lambda _: None))
    assert r.outcome == "skipped" and "export failed" in r.skipped


def test_every_output_check_compares_against_eager_not_against_itself(tmp_path):
    m = build_model("transformer", make_config("transformer"))
    setting = Setting(m, check_inputs("transformer", m, TEXT, [5]), tmp_path, lambda _: None)
    wrong = build_model("transformer", make_config("transformer", {"seed": 1}))  # other weights: a wrong artefact
    checks = check_against_eager(wrong, setting.model, setting.inputs)
    assert all(not c.correct and c.max_abs_diff > TOLERANCE for c in checks)


def test_a_draft_export_of_the_rnn_reports_the_guard_that_fixed_its_length(tmp_path):
    m = build_model("rnn", make_config("rnn"))
    r = ROUTES["export (draft)"](Setting(m, check_inputs("rnn", m, TEXT, LENGTHS), tmp_path, lambda _: None))
    assert "draft report, GUARD_ADDED: Eq(s27, 23)" in r.notes  # what export would have refused, said
    assert r.outcome == LOUD and r.checks[0].correct and "Guard failed" in r.checks[1].error
    assert "Eq(s27, 23)" in Path(r.report).read_text()  # the whole report, to take away beside the program
    example = check_inputs("rnn", m, TEXT, LENGTHS)[0].ids()
    with torch.no_grad():  # the .pt2 as Model Explorer or a server would load it
        assert (torch.export.load(r.artefact).module()(example) - m(example)).abs().max() < 1e-4


def test_a_decoders_decode_step_exports_with_its_cache_as_inputs_and_generates_what_eager_does(tmp_path):
    """The static cache: every shape fixed; the dynamic one: the cache's length symbolic. Each program, fed back
    its own cache, generates DECODE_STEPS tokens with eager's logits; another model has no decode step."""
    m = build_model("decoder", make_config("decoder"))
    setting = Setting(m, check_inputs("decoder", m, TEXT, [5]), tmp_path, lambda _: None)
    static, dynamic = (ROUTES[r](setting) for r in DECODE_ROUTES)
    for r in (static, dynamic):
        assert r.outcome == WORKS, r.first_problem()
        assert r.checks[0].tokens == DECODE_STEPS and r.checks[0].max_abs_diff <= TOLERANCE
    assert static.notes[0] == "range constraints: none: every shape is fixed"
    assert "index_copy" in " ".join(static.graph_ops) and "cat" in " ".join(dynamic.graph_ops)
    assert f"VR[1, {m.cfg.max_positions - 1}]" in dynamic.notes[0]  # one program for every cache length
    rnn = build_model("rnn", make_config("rnn"))
    skipped = ROUTES[DECODE_ROUTES[0]](Setting(rnn, check_inputs("rnn", rnn, TEXT, [5]), tmp_path, lambda _: None))
    assert skipped.outcome == "skipped" and "does not generate" in skipped.skipped
