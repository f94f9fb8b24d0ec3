"""The shapes lab: the graphs dynamo cached read off its own cache entries, every request predicted from their guards
before it runs, and the prediction checked against what dynamo then did, on the zoo and on a model of routing that
no one here wrote for it (top-1 experts with `nonzero`)."""

import textwrap

import pytest

from explorer.compile.options import CompileOptions
from explorer.core.batches import generate_lengths
from explorer.labs.shapes.checked import Check
from explorer.labs.shapes.job import OUTPUT_SHAPES, ShapesJob
from explorer.labs.shapes.predict import Outcome, predict
from explorer.labs.shapes.symbols import DUCK
from explorer.labs.shapes.view import against, format_shapes, view_of
from explorer.sources.registry import add_model_file
from explorer.workers.protocol import WorkerContext
from tests.helpers import ROOT, cli

ZIPF = tuple(generate_lengths(200, "zipf", 1, 120, 0))  # 200 requests, many of them short, a 1-token one among them
# a one-token input, the lengths compiled first, past the recompile limit, and a length repeated after its compile
MIXED = (5, 3, 1, 4, 2, 8, 40, 9, 21, 6, 6, 22, 11, 1, 16)
EAGER = CompileOptions("eager")  # the guards are dynamo's: the backend that compiles fastest


def _run(model: str, requests: tuple[int, ...], options: CompileOptions = EAGER,
         values: dict | None = None, switches: tuple[str, ...] = (), **levers):
    return ShapesJob(model, values or {}, options, (8, 16), requests, switches, **levers).run(
        WorkerContext(lambda _: None))


def test_the_rule_reuses_compiles_its_own_length_and_stops_at_the_limit():
    graphs = {16: None, 8: None}  # a cached graph per length, static

    def check(n):
        return [(f"0/{i}", None if n == length else f"expected {length}, actual {n}") for i, length in
                enumerate(graphs)]

    said = predict([8, 5, 5, 3, 9], check, limit=4)
    assert [p.outcome for p in said] == [Outcome.REUSES, Outcome.COMPILES, Outcome.REUSES, Outcome.COMPILES,
                                         Outcome.EAGER]
    assert said[2].graph == "new at request 2" and said[4].why == "expected 16, actual 9"


@pytest.mark.slow
@pytest.mark.parametrize(("model", "requests"), [("transformer", ZIPF), ("rnn", ZIPF), ("tree", MIXED),
                                                  ("early_exit", MIXED), ("gpt2", ZIPF)])
def test_every_request_does_what_its_guards_predicted(model, requests):
    r = _run(model, requests)
    wrong = [(q.predicted.length, q.predicted.outcome.value, q.did.value) for q in r.requests if not q.agrees]
    assert wrong == [] and r.agreed == len(requests)
    if model in ("transformer", "gpt2"):  # automatic dynamic: the length a symbol, 0/1 specialization keeps 1 apart
        assert r.graphs[0].dims == ("1", "dynamic") and r.count(Outcome.COMPILES, True) == 1
        assert any("2 <= L['ids'].size()[1]" in g.code for g in r.graphs[0].guards)
        batch, length = r.graphs[0].symbols.dimensions
        assert (batch.became, batch.value, batch.symbol) == ("static", "1", "") and "0/1" in batch.code
        assert length.became == "dynamic" and length.symbol.startswith("s") and length.value == "[2, ∞)"
    if model == "rnn":  # the unrolled loop: a graph per length, eager past the recompile limit
        assert [g.dims for g in r.graphs] == [("1", "16"), ("1", "8")]
        assert r.count(Outcome.COMPILES, False) == r.limit - 2 and r.count(Outcome.EAGER, False) > 0
        # the newest graph traced the length as a symbol (it had changed) and the loop specialized it, at its line
        line = next(i for i, t in enumerate((ROOT / "models" / "rnn.py").read_text().splitlines(), 1)
                    if "unbind(1)" in t)
        length = r.graphs[0].symbols.dimensions[1]
        assert (length.became, length.value, length.line) == ("specialized", "16", f"models/rnn.py:{line} in forward")
        assert "unbind(1)" in length.code
        assert f"specialized to 16** at models/rnn.py:{line}" in view_of(r).summary
    if model == "early_exit":  # a break in the loop: the forward itself has no graph, frames inside it do
        assert r.graphs == () and {q.did for q in r.requests} == {Outcome.SKIPPED}
        assert any("item()" in b.reason for b in r.breaks)


def test_dynamic_false_and_mark_dynamic_change_what_the_length_becomes():
    static = _run("transformer", (8, 12), CompileOptions("eager", "false"), {"layers": 1})
    assert [g.dims for g in static.graphs] == [("1", "16"), ("1", "8")]
    assert [q.predicted.outcome for q in static.requests] == [Outcome.REUSES, Outcome.COMPILES]
    marked = _run("transformer", (8, 12, 300), CompileOptions("eager", "auto", True), {"layers": 1})
    assert [g.dims for g in marked.graphs] == [("1", "dynamic")] and marked.agreed == 3
    assert {q.did for q in marked.requests} == {Outcome.REUSES}


def test_a_length_outside_mark_dynamics_range_is_predicted_to_fail_and_does():
    """mark_dynamic with a range: one graph holds the range (its guard says so); a length outside it, or of one
    token (a marked size is never 0 or 1), needs a graph the mark contradicts, and fails as predicted."""
    ranged = CompileOptions("eager", "auto", True, mark_min=2, mark_max=64)
    r = _run("transformer", (8, 40, 100, 1, 64), ranged, {"layers": 1})
    assert [q.predicted.outcome for q in r.requests] == [Outcome.REUSES, Outcome.REUSES, Outcome.OUTSIDE,
                                                         Outcome.OUTSIDE, Outcome.REUSES]
    assert r.agreed == 5 and any("2 <= L['ids'].size()[1] <= 64" in g.code for g in r.graphs[0].guards)
    assert "mark_dynamic [2, 64]" in r.setting
    from explorer.core.errors import InputError
    with pytest.raises(InputError, match="turn mark_dynamic on too"):
        CompileOptions("eager", "auto", False, mark_max=64)
    with pytest.raises(InputError, match="from its min to its max"):
        CompileOptions("eager", "auto", True, mark_min=65, mark_max=64)


def test_a_stance_that_compiles_nothing_new_runs_eagerly_or_fails_what_would_compile_as_predicted():
    held = _run("rnn", (8, 5, 16, 5, 9), stance="eager_on_recompile")
    assert [q.predicted.outcome for q in held.requests] == [Outcome.REUSES, Outcome.HELD, Outcome.REUSES,
                                                            Outcome.HELD, Outcome.HELD]
    assert held.agreed == 5 and "stance eager_on_recompile for the requests" in held.setting
    assert "3 run eagerly and 0 failing by the stance" in view_of(held).summary
    assert len(held.graphs) == 2  # nothing compiled while the requests ran
    failing = _run("rnn", (8, 5, 16), stance="fail_on_recompile")
    assert [(q.predicted.outcome, q.did) for q in failing.requests] == [
        (Outcome.REUSES, Outcome.REUSES), (Outcome.REFUSED, Outcome.REFUSED), (Outcome.REUSES, Outcome.REUSES)]
    assert "1 failed" in view_of(failing).summary


def test_eager_then_compile_runs_the_first_call_eagerly_and_compiles_one_dynamic_graph_instead_of_two():
    requests = (3, 40, 1, 16)
    default = _run("transformer", requests, values={"layers": 1})
    delayed = _run("transformer", requests, values={"layers": 1}, stance="eager_then_compile")
    # default: a graph static at 8, then one dynamic from 16; the stance: 8 ran eagerly, 16 compiled dynamic at once
    assert [g.dims for g in default.graphs] == [("1", "dynamic"), ("1", "8")]
    assert [g.dims for g in delayed.graphs] == [("1", "dynamic")]
    assert delayed.agreed == len(requests) and "stance eager_then_compile at 8, 16" in view_of(delayed).summary
    assert "by the stance" not in view_of(delayed).summary  # it holds back no request


def test_mark_unbacked_leaves_the_length_unspecialized_even_at_one_token_and_a_loop_that_needs_it_is_named():
    unbacked = _run("transformer", (1, 3, 40), values={"layers": 1}, unbacked=True)
    assert unbacked.agreed == 3 and {q.did for q in unbacked.requests} == {Outcome.REUSES}  # 1 token too
    length = unbacked.graphs[0].symbols.dimensions[1]
    assert length.became == "unbacked" and length.symbol.startswith("u") and unbacked.graphs[0].symbols.unbacked == ()
    # the RNN's loop needs the length's value: the graph breaks there, at its line, instead of specializing it
    line = next(i for i, t in enumerate((ROOT / "models" / "rnn.py").read_text().splitlines(), 1) if "unbind(1)" in t)
    rnn = _run("rnn", (3, 1, 8), unbacked=True)
    assert rnn.agreed == 3 and [b.where for b in rnn.breaks] == [f"models/rnn.py:{line}"]
    assert rnn.graphs[0].symbols.dimensions[1].became == "unbacked"


def test_export_with_the_length_a_dim_proves_its_range_or_is_refused_at_the_line_the_graphs_name():
    from explorer.core.limits import MAX_TOKENS

    proved, auto = _run("transformer", (3,), values={"layers": 1}, export=True).exported
    assert proved.error == "" and proved.ranges.endswith(f": [2, {int(MAX_TOKENS)}]")
    assert auto.dim == "Dim.AUTO" and auto.error == "" and auto.ranges.endswith(": [2, int_oo]") and not auto.line
    refused = view_of(_run("rnn", (3,), export=True))
    line = next(i for i, t in enumerate((ROOT / "models" / "rnn.py").read_text().splitlines(), 1) if "unbind(1)" in t)
    e, auto = refused.report["exported"]
    assert e["error"].startswith("UserError: Constraints violated (length)!") and "constant (8)" in e["error"]
    assert e["line"] == f"models/rnn.py:{line} in forward" and "unbind(1)" in e["code"]  # what export does not say
    assert f"the length was specialized at models/rnn.py:{line}" in refused.summary
    assert f"[specialized at models/rnn.py:{line} in forward" in format_shapes(refused.report)
    # Dim.AUTO lets export decide: the same specialization, taken without a refusal, at the same line
    assert auto["error"] == "" and auto["ranges"] == "none: exported for this one length (8, static)"
    assert auto["line"] == e["line"] and "torch.export with Dim.AUTO: range constraints none" in refused.summary


def test_an_export_refused_for_another_reason_is_not_explained_by_the_graphs_specialization():
    import torch

    from explorer.labs.shapes.exported import export_length
    from explorer.labs.shapes.symbols import Dimension

    class Refuses(torch.nn.Module):
        def forward(self, ids):
            raise ValueError("not this model's day")

    seen = Dimension(1, "s0", "specialized", "8", "models/rnn.py:97 in forward", "xs = list(x.unbind(1))")
    for e in export_length(Refuses(), torch.ones(1, 8, dtype=torch.long), 2, 64, seen):
        assert "not this model's day" in e.error and (e.line, e.code) == ("", "")


def test_the_length_marked_both_ways_or_an_unknown_or_unfed_stance_is_refused_before_any_worker_starts():
    from explorer.core.errors import InputError
    from explorer.labs.shapes.lab import run_shapes
    from explorer.workers.protocol import Workers

    with pytest.raises(InputError, match="dynamic or unbacked, not both"):
        next(run_shapes(Workers({}), ShapesJob("rnn", {}, CompileOptions("eager", "auto", True), (8,), (3,), (), True)))
    with pytest.raises(InputError, match="eager_on_recompile, fail_on_recompile, eager_then_compile; got 'force_"):
        next(run_shapes(Workers({}), ShapesJob("rnn", {}, EAGER, (8,), (3,), (), stance="force_eager")))
    with pytest.raises(InputError, match="compiles the second: give two lengths to compile at"):
        next(run_shapes(Workers({}), ShapesJob("rnn", {}, EAGER, (8,), (3,), (), stance="eager_then_compile")))
    with pytest.raises(InputError, match="must compare sizes"):
        next(run_shapes(Workers({}), ShapesJob("rnn", {}, EAGER, (8,), (3,), (), check=Check("open('x')", 0))))


@pytest.mark.slow
def test_nonzero_routing_is_named_at_its_line_with_its_setting_and_the_setting_compiles_it(menu_restored):
    path = ROOT / "tests" / "outside" / "moe_top1.py"
    name = add_model_file(str(path))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if ".nonzero()" in text)
    skipped = view_of(_run(name, (5, 9, 1)))
    assert f"moe_top1.py:{line}" in skipped.summary and "nonzero" in skipped.summary
    assert "capture_dynamic_output_shape_ops=True" in skipped.summary
    captured = _run(name, ZIPF, switches=(OUTPUT_SHAPES,))
    assert captured.graphs and captured.agreed == len(ZIPF)  # the setting turns the skip into compiled graphs
    assert "capture_dynamic_output_shape_ops=True" in captured.setting
    # each expert's nonzero is a size only the data decides: an unbacked symbol, born at its line
    born = captured.graphs[0].symbols.unbacked
    assert [u.symbol for u in born] == ["u0", "u1", "u2", "u3"]  # one per expert (four)
    assert {(u.op, u.line) for u in born} == {("nonzero", f"tests/outside/moe_top1.py:{line} in forward")}
    view = view_of(captured)
    assert view.symbols[-4][1:3] == ["u0 (from nonzero)", "unbacked"] and "nonzero()" in view.symbols[-4][5]
    assert f"`nonzero` at tests/outside/moe_top1.py:{line}" in view.summary


def test_the_report_is_json_and_the_cli_prints_each_length_once():
    import json

    r = _run("transformer", (3, 3, 1), EAGER, {"layers": 1})
    view = view_of(r)
    report = json.loads(json.dumps(view.report))
    assert report["agreed"] == 3 and report["requests"][0]["predicted"]["outcome"] == "reuses a graph"
    text = format_shapes(report)
    assert text.count("    3 tokens:") == 1 and "1 tokens: predicted compiles a graph, did compiles a graph" in text
    assert [row[0] for row in view.lengths] == [1, 3] and view.lengths[1][1] == 2


def test_its_endpoint_keeps_its_parameters_and_their_order():
    """The HTTP API as documented (docs/cli.md): the names and their order are a promise to callers."""
    from explorer.api import endpoint_parameters
    from explorer.labs.registry import LABS

    assert [p.name for p in endpoint_parameters(LABS["shapes"])] == [
        "model", "config_json", "lengths_from", "n", "min_len", "max_len", "seed", "lengths", "compiled_at",
        "backend", "dynamic", "mark_dynamic", "mark_min", "mark_max", "scalar_outputs", "output_shapes",
        "mark_unbacked", "stance", "export", "batch", "duck_shape", "check", "check_line"]


def test_a_notebooks_model_object_takes_the_lab_by_name_in_its_kernel(menu_restored):
    from explorer.core.errors import InputError
    from explorer.notebook import explore
    from models import build_model, make_config

    run = explore(build_model("transformer", make_config("transformer", {"layers": 1})), "hello")
    shapes = run.lab("shapes")  # the lab's default stream: 200 Zipf lengths
    assert shapes.report["agreed"] == 200 and "200 of 200 requests as predicted" in repr(shapes)
    with pytest.raises(InputError, match="unknown lab 'shape'; the labs are: batch, deploy"):
        run.lab("shape")


def test_a_request_the_model_fails_ends_the_run_naming_it_not_counted_as_predicted(tmp_path, menu_restored):
    path = tmp_path / "short_only.py"
    path.write_text(textwrap.dedent("""\
        import torch
        from torch import nn


        class ShortOnly(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embed = nn.Embedding(256, 8)

            def forward(self, ids: torch.Tensor) -> torch.Tensor:
                if ids.shape[1] > 20:
                    raise ValueError("at most 20 tokens")
                return self.embed(ids).sum(-1)


        def build() -> nn.Module:
            return ShortOnly()
        """))
    with pytest.raises(RuntimeError, match=r"request 2 at 30 tokens failed: .*at most 20 tokens"):
        _run(add_model_file(str(path)), (5, 30))


def test_two_sizes_equal_when_traced_share_one_symbol_and_duck_shape_off_gives_each_its_own():
    """Duck sizing: a batch of 8 rows of 8 tokens traced with dynamic=True gives both sizes one symbol, a graph that
    holds only square inputs; the 16-token compile then needs a second graph. Off, one graph holds both."""
    ducked = _run("transformer", (8, 4, 12, 1), CompileOptions("eager", "true"), {"layers": 1}, batch=8)
    assert ducked.agreed == 4 and len(ducked.graphs) == 2  # the square one, then one for any two sizes
    batch, length = ducked.graphs[-1].symbols.dimensions  # the oldest: compiled at 8 rows of 8 tokens
    assert batch.symbol == length.symbol != "" and DUCK in batch.code and "size(1)" in batch.code
    assert any("size()[1] == L['ids'].size()[0]" in g.code or "size()[0] == L['ids'].size()[1]" in g.code
               for g in ducked.graphs[-1].guards)
    assert "**duck sizing**" in view_of(ducked).summary and "batch 8" in ducked.setting
    apart = _run("transformer", (8, 4, 12, 1), CompileOptions("eager", "true"), {"layers": 1}, batch=8, duck=False)
    assert apart.agreed == 4 and len(apart.graphs) == 1 and "use_duck_shape=False" in apart.setting
    batch, length = apart.graphs[-1].symbols.dimensions
    assert batch.symbol != length.symbol and DUCK not in batch.code + length.code
    # the tab says what the lever changed against the person's previous run
    said = against(view_of(ducked).report, view_of(apart).report)
    assert "graphs of the forward 2 → 1" in said and "batch 8, use_duck_shape=False at [8, 16]" in said
    assert against(view_of(ducked).report, view_of(ducked).report) == ""  # the same setting: nothing to say


@pytest.mark.slow
def test_a_check_at_a_line_bounds_an_unbacked_length_so_the_assert_and_attention_compile_in_one_graph(menu_restored):
    """A GPT that asserts its block size, its length unbacked: the assert breaks the graph at its line; a
    torch._check of the bound inserted before it moves the break to attention (a length that could be 0); the
    check of both bounds leaves one graph for every length up to the block, 1 included."""
    path = ROOT / "tests" / "outside" / "block_gpt.py"
    name = add_model_file(str(path))
    text = path.read_text().splitlines()
    at = next(i for i, t in enumerate(text, 1) if t.strip().startswith("assert t <="))
    attention = next(i for i, t in enumerate(text, 1) if "scaled_dot_product_attention" in t)
    lengths = (5, 30, 1, 64)
    plain = _run(name, lengths, unbacked=True)
    assert [b.where for b in plain.breaks] == [f"tests/outside/block_gpt.py:{at}"]
    length = plain.graphs[0].symbols.dimensions[1]
    assert (length.became, length.symbol) == ("unbacked", "u0")  # the graph before the break takes the size only
    upper = _run(name, lengths, unbacked=True, check=Check("t <= 64", at))
    assert [b.where for b in upper.breaks] == [f"tests/outside/block_gpt.py:{attention}"]
    both = _run(name, lengths, unbacked=True, check=Check("1 <= t <= 64", at))
    assert both.breaks == () and len(both.graphs) == 1 and both.agreed == len(lengths)
    assert both.count(Outcome.REUSES, False) == len(lengths)  # no request compiled: one graph, 1 token included
    length = both.graphs[0].symbols.dimensions[1]
    assert (length.became, length.value) == ("unbacked", "[1, 64]")
    bound = next(g for g in both.graphs[0].guards if "<= 64" in g.code)
    assert bound.where == f"tests/outside/block_gpt.py:{at} in forward"
    assert f"torch._check(1 <= t <= 64) before line {at}" in view_of(both).summary
    said = against(view_of(plain).report, view_of(both).report)
    assert "graph breaks 1 → 0" in said and "`idx.size(1)` u0 unbacked [0, ∞) → u0 unbacked [1, 64]" in said


def test_a_check_is_sizes_compared_at_a_statements_line_and_anything_else_is_refused_in_one_line(tmp_path):
    from explorer.core.errors import InputError
    from explorer.labs.shapes.checked import parsed, with_check
    from models import build_model, make_config

    assert len(parsed("1 <= t <= 64")) == 2 and len(parsed("ids.size(1) >= ids.shape[0]")) == 1
    for bad in ("__import__('os').system('id')", "t <= 64 or True", "t.item() > 0", "t + 1 < 64", "t", "t <"):
        with pytest.raises(InputError, match=r"must compare sizes|is not a comparison"):
            parsed(bad)
    model = build_model("transformer", make_config("transformer", {"layers": 1}))
    with pytest.raises(InputError, match=r"no statement of TransformerEncoder.forward starts at line 1 of .*"
                                         r"its statements start at lines \d+"):
        with_check(model, Check("ids.size(1) <= 64", 1))
    said = cli("shapes", "--model", "transformer", "--check-line", "5")
    assert said.returncode == 2 and "give the check too" in said.stderr and "Traceback" not in said.stderr
    # a line the worker finds no statement at: refused as the person's input, naming no path of this machine
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("3")
    said = cli("shapes", "--model", "transformer", "--check", "t <= 4", "--check-line", "1", "--lengths", str(lengths))
    assert said.returncode == 2 and "error: no statement of TransformerEncoder.forward starts at line 1 of " \
        "models/transformer.py" in said.stderr and str(ROOT) not in said.stderr


@pytest.mark.slow
def test_a_check_goes_into_a_files_own_forward_behind_its_example_inputs(menu_restored):
    """examples/image_cnn.py makes its image from the ids in `example_inputs`: the check names the image, in the
    file's own forward (dynamo inlines it into the engine's wrapper, whose frame holds the guards)."""
    name = add_model_file(str(ROOT / "examples" / "image_cnn.py"))
    plain = _run(name, (5, 40))
    r = _run(name, (5, 40), check=Check("image.size(1) <= 64", 0))
    # the check's bound joins the convolution's lower one in one range guard (dynamo names the line that first
    # needed the range); without the check the length is unbounded above
    assert any(g.code == "3 <= L['ids'].size()[1] <= 64" for g in r.graphs[0].guards) and r.agreed == 2
    assert not any("<= 64" in g.code for g in plain.graphs[0].guards)
    assert r.graphs[0].symbols.dimensions[1].value == "[3, 64]"
