"""Each scenario gives its documented outcome on 2 real processes over gloo (the job's own code, run here rather
than in the distributed worker; the worker is tested in test_world.py)."""

import pytest

from explorer.labs.ddp import stragglers, unused
from explorer.labs.ddp.job import DdpJob
from explorer.labs.ddp.lab import ddp_setup
from explorer.labs.ddp.results import ALLREDUCE, COMPILE, STALLED, WAIT, DdpResult
from explorer.labs.ddp.scenario import HANG_TIMEOUT_S
from explorer.labs.ddp.view import timeline_figure
from explorer.workers.protocol import WorkerContext
from models import make_config

pytestmark = pytest.mark.slow
SMALL_TRANSFORMER = {"layers": 1, "width": 32, "heads": 2, "ffn_ratio": 2}


def _run(scenario: str, model: str, config: dict | None = None, steps: int = 2, **kw) -> DdpResult:
    setup = ddp_setup(scenario, model, make_config(model, config or {}), 2, steps, **kw)
    phases: list[str] = []
    result = DdpJob(scenario, setup).run(WorkerContext(phases.append))
    assert any("rank 0:" in p for p in phases)  # the ranks' progress is passed on
    return result


def test_unused_parameters_fail_plain_ddp_after_a_silently_wrong_step_and_not_with_find_unused():
    result = _run("unused", "early_exit")
    main, cost = result.runs
    depths = [r.report.values["depth"] for r in main.ranks]
    assert depths[0] < depths[1]  # the inputs really exit at different depths
    plain, find, static = unused.PHASES
    for r in main.ranks:
        v = r.report.values
        assert v[f"{plain}: gradient error"] > 1e-3  # step 1 completed with gradients that were never averaged
        assert "Expected to have finished reduction in the prior iteration" in v[f"{plain}: error"]
        assert v[f"{plain}: error step"] - v[f"{plain}: first step"] == 1  # at the second step
        assert f"{find}: error" not in v and v[f"{find}: gradient error"] <= unused.TOLERANCE
        assert len(v[f"{find}: step ms"]) == 2
        assert "graph has changed" in v[f"{static}: error"]
        assert v[f"{static}: error step"] - v[f"{static}: first step"] + 1 == unused.STATIC_SWAP_STEP
    names = main.ranks[0].report.values[f"{plain}: unused"]
    assert f"model.blocks.{depths[0]}.attn.qkv.weight" in names  # INFO names the blocks past rank 0's exit
    assert all(len(cost.ranks[0].report.values[f"{k} ms"]) == unused.COST_ROUNDS  # at least this many, paired
               for k in ("plain DDP", "find_unused_parameters=True", "one process alone"))
    assert {c.what.split(":")[0] for c in result.costs} >= {"plain DDP, exits differ", "nothing unused, plain DDP"}
    assert "WRONG" in result.verdict and "exact" in result.verdict
    ending = main.ending()  # each rank ran on, but its configurations raised: said, not "finished"
    assert "ran to its end" in ending and f"{plain} raised at the run's step" in ending and " steps;" not in ending
    fig = timeline_figure(result)  # each configuration named where it begins, an x where one raised
    assert {a.text for a in fig.layout.annotations} >= {f"run 1: {phase}" for phase in unused.PHASES}
    marks = next(t for t in fig.data if t.name == "raised / died").hovertext
    assert any(m.startswith(f"{plain} raised: ") for m in marks)
    assert any(m.startswith(f"{static} raised: ") for m in marks)
    # the cost of find_unused_parameters is said from its paired interval, whichever way it falls today
    said = result.verdict.split("step by step against plain DDP: ")[1]
    assert said.startswith(("no difference between find_unused_parameters and plain DDP resolved",
                            "plain DDP is", "find_unused_parameters is")) and "pairs)" in said


def test_equal_token_sharding_evens_the_padded_work_and_every_rank_step_has_its_wait():
    for step in range(1, 4):
        seqs = stragglers.global_batch(step, 2)
        rr, eq = (max(map(stragglers.padded, f(seqs, 2))) for f in (stragglers.round_robin, stragglers.equal_tokens))
        assert eq <= rr
        kept = [len(s) for shard in stragglers.equal_tokens(seqs, 2) for s in shard]
        assert sorted(kept) == sorted(map(len, seqs))  # every sentence, once
    result = _run("stragglers", "transformer", SMALL_TRANSFORMER)
    (run,) = result.runs
    assert run.ok
    for r in run.ranks:
        waits = {s.step for s in r.report.segments if s.kind == WAIT}
        assert waits == set(range(1, 2 * (2 + 1) + 1))  # every step of both shardings, warm-up included
        rr, eq = stragglers.SHARDINGS  # which sharding runs first alternates step by step (warm-up step 0 first)
        assert r.report.values["sharding"] == [eq, rr, rr, eq, eq, rr]
    assert [c.what for c in result.costs][:2] == ["round-robin: step (slowest rank)",
                                                  "equal tokens: step (slowest rank)"]
    said = result.verdict.split("step by step on the same batches: ")[1]
    # two steps a sharding: paired, but too few pairs for an interval, so no side is named
    assert said.startswith("round-robin and equal tokens: too few samples to compare (2; 8 needed)"), said


def test_a_collective_one_rank_skips_hangs_until_the_timeout_and_inside_ddp_aborts_then_the_fix_works():
    alone, in_ddp, fixed = _run("disagree", "rnn").runs
    short, long = alone.ranks
    assert short.state == "finished"
    assert long.state == "error" and "Timed out" in long.report.error
    assert HANG_TIMEOUT_S - 0.5 <= long.report.error_into_step_s <= HANG_TIMEOUT_S + 10
    assert any(s.kind == STALLED for s in long.report.segments)
    assert any(r.signal == "SIGABRT" for r in in_ddp.ranks)  # gloo's abort, no Python exception
    assert "collective mismatch" in in_ddp.ending()
    assert fixed.ok and all(any(s.kind == ALLREDUCE for s in r.report.segments) for r in fixed.ranks)


def test_uneven_inputs_hang_without_join_and_finish_with_it():
    plain, joined = _run("uneven", "rnn").runs
    assert plain.ranks[0].state == "finished" and plain.ranks[0].report.values["steps done"] == 3
    assert plain.ranks[1].state == "error" and plain.ranks[1].report.error_step == 4  # its first step alone
    assert "Timed out" in plain.ranks[1].report.error
    assert joined.ok and [r.report.values["steps done"] for r in joined.ranks] == [3, 5]


def test_compiled_ddp_splits_the_graph_at_buckets_and_each_rank_compiles_at_its_own_steps():
    wide = {"layers": 2, "width": 256, "heads": 2, "ffn_ratio": 4}  # 6 MiB of gradient: buckets past DDP's first
    result = _run("compiled", "transformer", wide, backend="aot_eager")
    (run,) = result.runs
    assert run.ok
    short, long = (r.report.values for r in run.ranks)
    assert short["graphs"] >= 2 and long["graphs"] > short["graphs"]  # split at buckets; rank 1 recompiled
    assert short["compiled at step"] == [1] and long["compiled at step"] == [1, 2]
    assert any(s.kind == COMPILE for s in run.ranks[1].report.segments)
