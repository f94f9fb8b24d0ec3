"""The optimization lab: each strategy serves a real workload (compile events counted), its answers are checked
against eager's or flagged, the generated code runs, and the lab runs end to end through its spec."""

import os
import random
import uuid
from dataclasses import replace

import pytest
import torch

from explorer.api import final, named_subject, run_lab
from explorer.compile.observe import CompileAt
from explorer.core.errors import InputError
from explorer.core.workload import Workload, workload
from explorer.labs.contract import LabContext
from explorer.labs.optimize.job import Served, ServeJob
from explorer.labs.optimize.lab import run_optimize
from explorer.labs.optimize.planner import Costs, plan_of
from explorer.labs.optimize.results import OptimizeResult, totals
from explorer.labs.optimize.snippet import snippet
from explorer.labs.registry import LABS
from explorer.sources.registry import build_model, make_config
from explorer.workers.process import COMPILER_ENV
from explorer.workers.protocol import Here, WorkerContext, Workers
from models.tokenizer import encode

LENGTHS = (9, 23, 9, 14, 23, 30)


def _served(model: str, config: dict, strategy: str, lengths=LENGTHS, boundaries=(16, 30)) -> Served:
    job = ServeJob(model, config, lengths, strategy, "eager", {"planned": boundaries, "pow2": (16, 30)})
    return job.run(WorkerContext(lambda phase: None))


def test_regional_compilation_compiles_the_repeated_block_once_for_every_block():
    served = _served("transformer", {"layers": 4}, "regional", lengths=(12, 12, 12))
    assert served.error == "" and len(served.compiles) == 1  # one graph, reused by the four blocks
    whole = _served("transformer", {"layers": 4}, "auto", lengths=(12, 12, 12))
    assert len(whole.compiles) == 1 and all(served.compiled) and served.max_diff < 1e-5


def test_padding_to_buckets_compiles_once_per_bucket_and_answers_as_eager_at_each_request():
    served = _served("rnn", {"hidden": 16, "embed": 8}, "buckets")
    assert [c.at for c in served.compiles] == [0, 1]  # 9 -> bucket 16, 23 -> bucket 30; then no more
    assert served.computed_tokens == 16 + 30 + 16 + 16 + 30 + 30 and served.max_diff < 1e-4
    auto = _served("rnn", {"hidden": 16, "embed": 8}, "auto")  # the unrolled loop: a graph per length
    assert len(auto.compiles) == 4 and auto.compiles[1].reason != "first compile"
    skipped = ServeJob("tree", {}, LENGTHS, "buckets", "eager", {"planned": (30,)})  # its forward takes no lengths
    assert "forward(ids, lengths=None)" in skipped.run(WorkerContext(lambda phase: None)).skipped


def test_the_profile_a_recording_process_leaves_makes_the_next_one_start_symbolic():
    lengths = (9, 23, 14, 30)
    cold = _served("transformer", {"layers": 1}, "auto", lengths=lengths)
    assert len(cold.compiles) == 2  # static at 9, then symbolic after the length changed
    job = ServeJob("transformer", {"layers": 1}, lengths, "pgo", "eager", {}, f"test-{uuid.uuid4().hex}")
    job.run(WorkerContext(lambda phase: None))  # the recording run (the lab gives it a process of its own)
    served = job.run(WorkerContext(lambda phase: None))
    assert [c.at for c in served.compiles] == [0] and served.max_diff < 1e-5  # symbolic from the first request


def test_the_mega_cache_a_recording_process_saves_makes_the_next_one_compile_nothing_new():
    job = ServeJob("transformer", {"layers": 1}, (9, 23, 9), "warm_start", "inductor", {}, records=True)
    # as in a worker, whose job id would have the mega-cache carry an automatic-dynamic profile too (a recompile
    # writes one), which a process without profiles cannot load (the config's own patch: pytest's monkeypatch
    # hides a torch config entry when it undoes)
    with torch.compiler.config.patch(job_id=COMPILER_ENV["TORCH_COMPILE_JOB_ID"]):
        recording = job.run(WorkerContext(lambda phase: None))
        assert (recording.cache_hits, recording.cache_misses) == (0, 2) and recording.artifacts  # empty at start
        served = replace(job, records=False, artifacts=recording.artifacts).run(WorkerContext(lambda phase: None))
    assert served.error == "" and (served.cache_hits, served.cache_misses) == (2, 0)  # read from the mega-cache
    assert len(served.compiles) == 2 and served.max_diff < 1e-4  # (dynamo still traces, and asks inductor)
    eager = replace(job, backend="eager").run(WorkerContext(lambda phase: None))
    assert "compile with inductor" in eager.skipped


def test_a_strategy_past_its_time_bound_is_stopped_in_its_own_process_and_reported_as_such():
    here = Here()
    workers = replace(Workers.on(here), fresh=True)  # the planner's probe here, each strategy fresh
    stream = Workload((200,) * 400, "typed")  # far more than a second of the unrolled RNN, eagerly
    *_, result = run_optimize(workers, "rnn", make_config("rnn", {}), stream, ["eager"], "eager", 1.0)
    [stopped] = result.served  # the lab goes on: a row that says so, not an exception
    assert stopped.error.startswith("stopped: ") and "timed out" in stopped.error and not stopped.seconds
    assert "No strategy served the whole stream" in result.recommendation()


def test_eager_on_recompile_compiles_the_warm_up_request_only_and_runs_new_shapes_eagerly():
    served = _served("transformer", {"layers": 1}, "eager_on_recompile", lengths=(9, 23, 9, 14))
    assert [c.at for c in served.compiles] == [0] and served.compiled == [True, False, True, False]


def test_a_strategy_that_changes_answers_is_flagged_and_never_ranked():
    plan = plan_of(LENGTHS, (30,))
    result = OptimizeResult("rnn", {}, Workload(LENGTHS, "typed"), "eager", Costs.flat(1.0, 1e-5), {"planned": plan},
                            True)
    fast_wrong = Served("auto", [1e-4] * 6, [1e-3] * 6, computed_tokens=sum(LENGTHS), max_diff=0.5)
    slow_right = Served("eager", [1e-3] * 6, [1e-3] * 6, computed_tokens=sum(LENGTHS))
    result.served += [fast_wrong, slow_right]
    assert result.ranked() == [slow_right]
    assert "changes answers (not ranked): auto" in result.recommendation()
    assert result.row(fast_wrong)["same_answers"] is False


def test_a_compile_counts_in_full_in_the_interval_of_the_totals():
    """Resampling the requests never drops a compile: one 2 s compile against 200 x 0.5 ms of eager is slower by
    the whole interval, however the other requests are drawn."""
    compiled = Served("auto", [2.0] + [3e-4] * 199, [5e-4] * 200, compiles=[CompileAt(0, 2.0, "first compile")])
    eager = Served("eager", [5e-4] * 200, [5e-4] * 200)
    t = totals(compiled, eager)
    assert t.faster == "eager" and t.low > 19 and "eager serves the stream" in t.said()
    result = OptimizeResult("rnn", {}, Workload((8,) * 200, "typed"), "eager", Costs.flat(1.0, 1e-5), {}, True,
                            [compiled, eager])
    assert result.catches_up(compiled) is None  # 1.96 s behind at the end, 0.2 ms saved a request: 9,798.5 more
    assert result.break_even(compiled).calls == 200 + 9_799 and result.break_even(eager) is None


def _stream(strategy: str, ms: float, seed: int, compile_s: float = 0.0, n: int = 200) -> Served:
    """A strategy's stream of n requests at about `ms` each (±10% noise, seeded), eager's beside it at 1 ms."""
    rng = random.Random(seed)
    seconds = [ms * 1e-3 * rng.uniform(0.9, 1.1) for _ in range(n)]
    compiles = [CompileAt(0, compile_s, "first compile", "fx miss, aot miss")] if compile_s else []
    if compile_s:
        seconds[0] += compile_s
    return Served(strategy, seconds, [1e-3 * rng.uniform(0.9, 1.1) for _ in range(n)], compiles=compiles)


def test_a_winner_is_named_only_when_its_total_beats_the_runner_up_by_the_whole_interval():
    def recommendation(*served: Served) -> tuple[OptimizeResult, str]:
        result = OptimizeResult("rnn", {}, Workload((8,) * 200, "typed"), "eager", Costs.flat(1.0, 1e-5), {}, True,
                                list(served))
        return result, result.recommendation()

    # two strategies with the same cost per request: a tie, named as a group, and no snippet applies either
    result, said = recommendation(_stream("buckets", 0.5, 1), _stream("pow2", 0.5, 2), _stream("eager", 1.0, 3))
    assert result.fastest() is None and "Fastest" not in said and said.startswith("No single fastest: ")
    assert {s.strategy for s in result.tied()} == {"buckets", "pow2"} and "eager" not in said.split(";")[0]
    # one clearly quicker: named, with the interval against the runner-up
    result, said = recommendation(_stream("buckets", 0.3, 1), _stream("pow2", 0.5, 2), _stream("eager", 1.0, 3))
    assert result.fastest().strategy == "buckets" and said.startswith("Fastest to serve this workload: **buckets**")
    assert "buckets serves the stream" in said and "best p95" not in said


def test_the_break_even_past_the_stream_carries_its_range_and_whether_its_compile_was_cold():
    compiled = _stream("auto", 0.8, 4, compile_s=2.0)
    result = OptimizeResult("rnn", {}, Workload((8,) * 200, "typed"), "eager", Costs.flat(1.0, 1e-5), {}, True,
                            [compiled])
    be = result.break_even(compiled)
    assert be.low < be.value < be.high and be.said().startswith("about ")
    row = result.row(compiled)
    assert row["break_even_said"] == be.said() and row["compile_cache"] == "cold"
    assert result.steady(compiled).pairs == 20  # blocks of consecutive requests, not the 199 requests themselves


@pytest.mark.parametrize(("model", "strategy"), [("rnn", "buckets"), ("rnn", "one_op_loop"),
                                                 ("transformer", "regional"), ("transformer", "mark_dynamic"),
                                                 ("transformer", "eager_on_recompile"), ("transformer", "pgo"),
                                                 ("transformer", "warm_start")])
def test_the_generated_code_runs_and_answers_as_eager(model, strategy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the warm start's snippet keeps its cache
    config = {"rnn": {"hidden": 16, "embed": 8}, "transformer": {"layers": 2}}[model]
    full = dict(vars(make_config(model, config)))
    code = snippet(model, full, strategy, "eager", build_model(model, make_config(model, config)), (16, 30),
                   (9, 30))
    space: dict = {}
    exec(compile(code, f"<{strategy} snippet>", "exec"), space)
    reference = build_model(model, make_config(model, config)).eval()
    for n in LENGTHS:
        ids = torch.tensor([encode("The cat sat on the mat, and then it slept."[:n])])
        with torch.no_grad():
            assert (space["serve"](ids) - reference(ids)).abs().max() < 1e-4, (strategy, n)
    if "save" in space:
        space["save"]()  # with the eager backend there is no compiled graph to save: it writes nothing
    torch.compiler.set_stance("default")  # what the stance and pgo snippets set for the whole process
    torch.compiler.config.job_id = None
    torch._dynamo.reset()


@pytest.mark.slow
def test_the_warm_start_snippet_saves_the_mega_cache_and_the_next_process_compiles_nothing_new(tmp_path, monkeypatch):
    """The snippet as a person runs it, with inductor (the eager backend has no compiled graph to save): the first
    process serves and saves, and the next (its caches of its own, empty, as on a fresh deploy) reads every graph
    from the saved file: inductor's FX-graph cache hits, no miss."""
    from torch._dynamo.utils import counters

    from explorer.labs.optimize.job import own_caches

    monkeypatch.chdir(tmp_path)  # where the snippet keeps compile-cache.bin
    config = {"layers": 1}
    code = snippet("transformer", dict(vars(make_config("transformer", config))), "warm_start", "inductor",
                   build_model("transformer", make_config("transformer", config)), (), (9, 30))
    ids = torch.tensor([encode("The cat sat on the mat.")])
    for process in ("first", "next"):
        torch._dynamo.reset()
        with own_caches():
            hits, misses = counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]
            space: dict = {}
            exec(compile(code, f"<warm_start snippet, {process} process>", "exec"), space)
            with torch.no_grad():
                space["serve"](ids)
            if process == "first":
                space["save"]()
                assert (tmp_path / "compile-cache.bin").stat().st_size > 0
            read = (counters["inductor"]["fxgraph_cache_hit"] - hits,
                    counters["inductor"]["fxgraph_cache_miss"] - misses)
        assert read == ((0, 1) if process == "first" else (1, 0)), (process, read)
    torch._dynamo.reset()


def test_the_lab_through_its_spec_serves_the_stream_with_each_strategy_and_refuses_bad_workloads():
    here = Here()
    ctx = LabContext(Workers.on(here), lambda: "")
    view = final(run_lab(LABS["optimize"], named_subject("transformer", {"layers": 1}), {
        "n": 12, "max_len": 40, "strategies": "eager,auto,buckets,pow2", "backend": "eager"}, ctx))
    assert [r[0] for r in view.strategies] == ["eager", "auto", "buckets", "pow2"]
    report = view.report
    assert report["fresh"] is False and "one after another in this process" in view.status
    assert all(r["same_answers"] for r in report["strategies"]) and report["plans"]["pow2"]["boundaries"]
    assert report["strategies"][1]["compiles"] >= 1
    if view.recommendation.startswith("Fastest to serve this workload"):  # a winner resolved: its code
        assert "def serve" in view.code or "serve =" in view.code
    else:  # 12 requests: the totals' interval may not separate the first two
        assert view.recommendation.startswith("No single fastest") and "nothing to apply" in view.code
    with pytest.raises(InputError, match="a length is a whole number"):
        final(run_lab(LABS["optimize"], named_subject("rnn", {}), {"lengths": "4, x"}, ctx))
    with pytest.raises(InputError, match="this server takes at most"):
        LABS["optimize"].parse({"lengths_from": "uniform", "n": 1000, "min_len": 400, "max_len": 500})
    assert workload("zipf", 0, 1, 1, "3\n5,7 9").lengths == (3, 5, 7, 9)  # typed lengths: the distribution unused


def test_which_of_a_requests_pair_runs_first_alternates(monkeypatch):
    """The strategy's answer and eager's, request by request: the strategy first at even requests, eager first at
    odd ones, so neither always meets the machine as the other left it."""
    from explorer.labs.optimize import job

    order: list[str] = []
    timed = job._timed

    def recording(fn, ids):
        order.append("strategy" if type(fn).__name__ == "OptimizedModule" else "eager")
        return timed(fn, ids)

    monkeypatch.setattr(job, "_timed", recording)
    served = _served("transformer", {"layers": 1}, "auto", lengths=(9, 9, 9, 9))
    assert served.error == "" and order == ["strategy", "eager", "eager", "strategy"] * 2


def test_a_stream_where_every_request_compiled_has_no_interval_of_its_totals():
    every = Served("dynamic_false", [1.0] * 6, [1e-3] * 6, compiles=[CompileAt(i, 1.0, "new length") for i in range(6)])
    eager = Served("eager", [1e-3] * 6, [1e-3] * 6)
    t = totals(eager, every)
    assert (t.low, t.high, t.faster) == (None, None, None) and t.requests == 0
    assert "0 requests without a compile, too few for an interval (8 needed)" in t.said()


@pytest.mark.slow
def test_a_strategys_peak_memory_is_its_own_process_not_the_one_that_started_it():
    """getrusage's ru_maxrss survives the exec of a spawned process: every strategy's "peak" read the server's
    resident size. The fresh worker's own high-water mark is far below a parent holding an extra gigabyte."""
    from explorer.labs.optimize.job import optimize_service
    from explorer.workers.process import resident_mb

    ballast = bytearray(2**30)  # the parent's resident size up by a gigabyte, touched
    ballast[::4096] = b"x" * len(ballast[::4096])
    parent = resident_mb(os.getpid(), "VmHWM")
    service = optimize_service(120.0)
    try:
        *_, served = service.run(ServeJob("transformer", {"layers": 1}, (9, 12), "eager", "eager", {}))
    finally:
        service.stop()
    assert served.error == "" and 0 < served.peak_rss_mb < parent - 800, (served.peak_rss_mb, parent)
    del ballast


def test_mark_dynamic_on_a_loop_that_fixes_the_length_says_which_line_and_does_not_apply():
    served = _served("rnn", {"hidden": 16, "embed": 8}, "mark_dynamic")
    assert served.error == "" and "ConstraintViolationError at request 1" in served.skipped
    assert "(at models/rnn.py:" in served.skipped and "unbind(1)" in served.skipped  # the line that specialized it
    marked = _served("transformer", {"layers": 1}, "mark_dynamic")  # no loop over the tokens: it holds
    assert not marked.skipped and not marked.error and [c.at for c in marked.compiles] == [0]


def test_the_loop_as_one_operator_compiles_under_inductor_and_answers_as_eager():
    """torch 2.13's inductor lowers a scan to a loop that reads its step with .item(): served with captured scalar
    outputs (without them every request failed with DataDependentOutputException)."""
    job = ServeJob("rnn", {"hidden": 16, "embed": 8}, (9, 23), "one_op_loop", "inductor", {})
    served = job.run(WorkerContext(lambda phase: None))
    assert served.error == "" and all(served.compiled) and served.max_diff < 1e-4
    code = snippet("rnn", {"hidden": 16, "embed": 8}, "one_op_loop", "inductor",
                   build_model("rnn", make_config("rnn", {})))
    assert "torch._dynamo.config.capture_scalar_outputs = True" in code
