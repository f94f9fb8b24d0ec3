"""Real torch.compile in the real compile worker, on small models so the suite stays fast."""

from dataclasses import replace

import pytest
import torch
import torch._dynamo as dynamo

from explorer.compile.model import CompiledModel
from explorer.compile.observe import Explanation
from explorer.compile.options import CompileOptions
from explorer.compile.track import CompiledRun, CompileTrack
from explorer.core.errors import InputError
from explorer.core.inputs import text_of_length
from explorer.eager.compare import Comparison
from explorer.labs.optimize.job import COMPILED_GRAPH_CACHES, link_shared_caches
from explorer.runs.session import Session
from explorer.workers.process import WorkerProcess
from models import build_model, make_config
from models.tokenizer import encode
from tests.helpers import ROOT, early_exit_branch

pytestmark = pytest.mark.slow
LENGTHS = (8, 16, 32, 64, 8)


@pytest.fixture(scope="module")
def service():
    svc = WorkerProcess(timeout_s=120)
    yield svc
    svc.stop()


def _cold_graph_caches(tmp_path, monkeypatch) -> None:
    """Inductor's cache directory for this test's workers: its compiled-graph caches and dynamo's automatic-dynamic
    profile start empty; its toolchain and compiled kernels are the shared, warm ones (a whole cold directory cost
    the suite a C++ toolchain warm-up per test, 25 s each)."""
    link_shared_caches(str(tmp_path), (*COMPILED_GRAPH_CACHES, "dynamo"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))


@pytest.fixture
def fresh_service(tmp_path, monkeypatch):
    """A worker whose caches and automatic-dynamic profile start empty (both live in inductor's cache dir)."""
    _cold_graph_caches(tmp_path, monkeypatch)
    svc = WorkerProcess(timeout_s=120)
    yield svc
    svc.stop()


def _timeline(service, options, model="transformer", config=None, lengths=LENGTHS, session="t"):
    track = CompileTrack(session)
    tokens = [encode(text_of_length("hello world ", n)) for n in lengths]
    config = {"layers": 1, "width": 16, "heads": 2} if config is None else config
    runs = [r for r in track.run(service, model, config, model, options, tokens) if isinstance(r, CompiledRun)]
    return track, runs


@pytest.mark.parametrize(
    ("dynamic", "mark", "compiles", "symbolic"),
    [("auto", False, 2, [False, True]), ("true", False, 1, [True]), ("false", False, 4, [False] * 4),
     ("auto", True, 1, [True])],
)
def test_recompiles_per_dynamic_mode(fresh_service, dynamic, mark, compiles, symbolic):
    track, runs = _timeline(fresh_service, CompileOptions("eager", dynamic, mark))
    assert len(track.timeline) == compiles
    assert [e.event.dynamic for e in track.timeline] == symbolic
    assert [e.event.length for e in track.timeline] == [8, 16, 32, 64][:compiles]
    if compiles > 1:
        assert track.timeline[1].event.reason == "tensor 'ids' size mismatch at index 1. expected 8, actual 16"
    assert track.timeline[0].event.reason == "first compile of this frame"
    assert all(r.fallback is None and r.compiled is not None for r in runs)
    assert runs[-1].compile_s == 0  # length 8 again: a cache hit


def test_graph_breaks_are_read_off_the_real_compile_and_match_explain(service):
    text = "The cat sat on the mat."
    _, runs = _timeline(service, CompileOptions("eager"), model="early_exit", config={}, lengths=(len(text),))
    ids = torch.tensor([encode(text_of_length("hello world ", len(text)))])
    expected = dynamo.explain(build_model("early_exit", make_config("early_exit")))(ids)
    ex = runs[0].explanation
    # dynamo's own count, as explain's: the branch's item() and, while handling it, the loop's frame skipped: 2
    assert (ex.graph_count, ex.graph_break_count) == (expected.graph_count, expected.graph_break_count)
    assert ex.graph_break_count > len(ex.graph_breaks) == 1
    brk = ex.graph_breaks[0]
    assert brk.where == early_exit_branch() and "confidence" in brk.code
    assert "item()" in brk.reason


def test_fullgraph_shows_the_real_error(service):
    _, runs = _timeline(service, CompileOptions("eager", fullgraph=True), model="early_exit", config={},
                        lengths=(12,))
    assert runs[0].compiled is None
    assert runs[0].fallback.startswith("compile failed: ")
    assert "data-dependent" in runs[0].fallback.lower() or "guard" in runs[0].fallback.lower()
    assert f"(at {early_exit_branch()}: " in runs[0].fallback  # the user's line, which dynamo's first line lacks
    assert runs[0].break_even_calls is None and runs[0].speedup is None


def test_recompile_limit_fallback_is_labelled(monkeypatch):
    monkeypatch.setenv("GE_RECOMPILE_LIMIT", "2")
    svc = WorkerProcess()
    try:
        track, runs = _timeline(svc, CompileOptions("eager", "false"), lengths=(4, 5, 6, 7))
    finally:
        svc.stop()
    assert len(track.timeline) == 2
    assert [r.fallback is None for r in runs] == [True, True, False, False]
    assert "recompile limit (2) hit at length 6" in runs[2].fallback
    assert "ran it eagerly (the recompile limit was hit at length 6)" in runs[3].fallback
    assert runs[2].break_even_calls is None
    assert runs[2].speedup is None and runs[3].speedup is None  # no compiled code ran: no speed-up to show


def test_sessions_keep_separate_timelines_and_share_the_automatic_dynamic_profile(fresh_service):
    a, b = CompileTrack("session-a"), CompileTrack("session-b")
    opts = CompileOptions("eager")

    def run(track, config, n):
        list(track.run(fresh_service, "transformer", config, "x", opts, [encode("y" * n)]))

    run(a, {"layers": 1, "width": 16, "heads": 2}, 8)
    run(a, {"layers": 1, "width": 16, "heads": 2}, 16)
    run(b, {"layers": 2, "width": 16, "heads": 2}, 8)
    run(a, {"layers": 1, "width": 16, "heads": 2}, 32)  # the worker replays a's inputs first
    assert [(e.event.length, e.event.compile_id, e.event.dynamic) for e in a.timeline] == [(8, "0/0", False),
                                                                                           (16, "0/1", True)]
    # b compiles once, in its own timeline; the length's variation that a showed is remembered (dynamo's
    # automatic-dynamic profile), so b's first graph is already symbolic, and says why.
    [(length, compile_id, dynamic, reason)] = [(e.event.length, e.event.compile_id, e.event.dynamic, e.event.reason)
                                               for e in b.timeline]
    assert (length, compile_id, dynamic) == (8, "0/0", True) and "automatic-dynamic profile" in reason


def test_session_report_has_the_compiled_keys(service):
    from explorer.views.report import build_report

    s = Session()
    s.configure("transformer", {"layers": 1, "width": 16, "heads": 2})
    r = s.run("hello there")
    items = list(s.run_compiled(service, CompileOptions("aot_eager")))
    assert items[-1] is r.compiled
    report = build_report(r, s.compile_track)
    c = report["compiled"]
    for key in ("forward", "compile_s", "speedup", "break_even_calls", "fallback", "graph_count", "graph_breaks"):
        assert key in c
    assert c["forward"]["median_ms"] > 0 and c["forward"]["iqr_ms"] >= 0 and c["compile_s"] > 0
    assert report["timeline"][0]["length"] == 11 and set(report["timeline"][0]) >= {
        "length", "reason", "dynamic", "compile_s"}


def test_a_skipped_module_is_explained_not_shown_as_zeros():
    from explorer.compile.observe import BreakLog, CountingBackend, Explanation, run_guarded
    from explorer.compile.track import honest_fallback
    from explorer.views.compiled import breaks_markdown

    class WithGRU(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.gru = torch.nn.Embedding(256, 8), torch.nn.GRU(8, 8, batch_first=True)

        def forward(self, ids):
            return self.gru(self.embed(ids))[0]

    counter = CountingBackend("eager")
    compiled = torch.compile(WithGRU(), backend=counter)
    with BreakLog() as breaks, torch.no_grad():
        ran = run_guarded(lambda: compiled(torch.tensor([encode("hello")])), counter)
    assert ran.fallback and "no compiled graph ran" in ran.fallback and counter.graphs == 0
    ex = Explanation.of(5, [], breaks.breaks)
    assert ex.skipped and ex.graph_break_count == -1
    message = honest_fallback(ran.fallback, None, ex)
    assert "captured no graph" in message and "allow_rnn" in message
    run = CompiledRun(5, "gru", CompileOptions("eager"), None, None, None, None, None, 0.0, 0.0, message, 0, ex)
    assert "captured no graph at all" in breaks_markdown(run)


def test_a_skipped_forward_says_the_cause_dynamo_recorded_at_the_users_line_not_a_sentence_about_rnns():
    import runpy

    from explorer.compile.observe import BreakLog, CountingBackend, run_guarded
    from explorer.compile.track import honest_fallback
    from explorer.views.compiled import breaks_markdown, compiled_cards

    path = ROOT / "tests" / "outside" / "moe_top1.py"
    model = runpy.run_path(str(path))["build"]().eval()  # no RNN anywhere: top-1 expert routing
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    with BreakLog() as breaks, torch.no_grad():
        ran = run_guarded(lambda: compiled(torch.tensor([encode("hello world")])), counter)
    ex = Explanation.of(11, [], breaks.breaks)
    message = honest_fallback(ran.fallback, None, ex)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "nonzero" in text)
    assert "nonzero" in message and f"moe_top1.py:{line}" in message
    assert "capture_dynamic_output_shape_ops=True" in message and "RNN" not in message
    run = CompiledRun(11, "moe", CompileOptions("eager"), None, None, None, None, None, 0.0, 0.0, message, 0, ex)
    assert "nonzero" in breaks_markdown(run) and "RNN" not in breaks_markdown(run)
    graphs = dict((k, (v, d)) for k, v, d in compiled_cards(run))["graphs"]
    assert "-1" not in graphs[1] and "0 graph break" not in graphs[1] and "dynamo skipped the forward" in graphs[1]


def test_timed_compiled_calls_really_reach_compiled_code():
    cm = CompiledModel("transformer", {"layers": 1, "width": 16, "heads": 2}, CompileOptions("eager"))
    ids = torch.tensor([encode("hello world")])
    assert cm.call(ids).fallback is None
    before = cm.compiled_calls
    figures = cm.measure(ids)
    assert figures.comparison.pairs == figures.compiled.runs >= 8  # eager and compiled, timed in pairs
    assert cm.compiled_calls - before >= figures.compiled.runs  # every timed call went through a compiled graph


def test_a_scan_compiles_under_inductor_with_captured_scalar_outputs_and_says_so():
    """torch 2.13's inductor lowers a scan to a loop that reads its step with .item(); without captured scalar outputs
    the Playground's compiled side of the RNN with loop=scan failed (DataDependentOutputException)."""
    cm = CompiledModel("rnn", {"loop": "scan", "hidden": 16, "embed": 8}, CompileOptions("inductor"))
    ids = torch.tensor([encode("hello there world")])
    outcome = cm.call(ids)
    assert outcome.error is None and outcome.fallback is None and len(outcome.events) == 1
    assert "capture_scalar_outputs=True" in outcome.events[0].reason and cm.scalar_outputs
    assert cm.measure(ids).comparison.pairs >= 8
    assert cm.call(torch.tensor([encode("a longer sentence than that")])).error is None  # the recompile too


def test_an_inductor_compile_reports_dynamos_seconds_and_the_cache_that_served_it(tmp_path, monkeypatch):
    _cold_graph_caches(tmp_path, monkeypatch)  # its graph caches cold, private to this test
    caches = []
    for _ in range(2):  # a fresh worker each time: only inductor's on-disk cache carries over
        svc = WorkerProcess()
        try:
            track, runs = _timeline(svc, CompileOptions("inductor"), lengths=(8,))
        finally:
            svc.stop()
        (entry,) = track.timeline
        assert runs[0].fallback is None and runs[0].compiled is not None and runs[0].speedup is not None
        assert entry.event.compile_s > 0 and runs[0].compile_s == entry.event.compile_s
        caches.append(entry.event.cache)
    assert caches[0].startswith("fx miss") and caches[1].startswith("fx hit"), caches


def _run(eager_ms, compiled_ms, fallback=None, spread=0.01):
    """A compiled run whose 20 pairs have these medians, each sample up to `spread` (relative) off it either way, the
    two sides' noise unrelated (evenly spread, in two unrelated orders: no two pairs alike)."""
    eager = [eager_ms * (1 + spread * ((7 * i) % 20 - 9.5) / 9.5) for i in range(20)]
    compiled = [compiled_ms * (1 + spread * ((13 * i + 5) % 20 - 9.5) / 9.5) for i in range(20)]
    pair = Comparison.of("eager", "compiled", eager, compiled)
    return CompiledRun(8, "x", CompileOptions("eager"), pair.measurement("eager"), pair.measurement("compiled"), pair,
                       None, None, 3.0, 3.0, fallback, 1, Explanation(8, 1, 0, ()))


def test_break_even_is_compile_seconds_over_the_per_call_saving_once_compiled_is_resolved_faster():
    assert _run(2.0, 1.0).break_even_calls == 3000  # 3 s paid back at 1 ms a call
    assert _run(2.0, 1.5).break_even_calls == 6000
    assert _run(1.0, 1.0).break_even_calls is None and _run(1.0, 2.0).break_even_calls is None  # never
    assert _run(2.0, 1.0, "recompile limit (8) hit").break_even_calls is None
    assert _run(1.05, 1.0, spread=0.3).break_even_calls is None  # faster by its median, not by its interval


def test_a_speedup_carries_its_interval_and_an_unresolved_one_says_so():
    from explorer.views.compiled import compiled_cards

    steady = dict((k, (v, d)) for k, v, d in compiled_cards(_run(2.0, 1.0)))["speed-up vs eager"]
    assert steady[0] == "2.00x" and "compiled is 2.00x faster than eager (95% interval" in steady[1]
    noisy = dict((k, (v, d)) for k, v, d in compiled_cards(_run(1.1, 1.0, spread=0.4)))["speed-up vs eager"]
    assert noisy[0].endswith("(not resolved)") and "no difference between eager and compiled resolved" in noisy[1]
    report = _run(2.0, 1.0).as_dict()
    assert report["faster"] is True and report["pairs"] == 20 and report["speedup_interval"][0] > 1
    low, high = report["break_even_range"]
    assert low <= report["break_even_calls"] <= high and report["compile_cache"] == "no compile"
    cards = dict((k, (v, d)) for k, v, d in compiled_cards(replace(_run(2.0, 1.0), caches=("fx miss, aot miss",))))
    assert cards["compile time"][1].startswith("cold; this input") and "cold" in cards["break-even"][1]
    assert cards["break-even"][1].startswith("about ")  # its range, from the speed-up's interval


def test_whether_inductor_served_a_compile_is_said_in_words():
    from explorer.compile.observe import cache_said

    assert cache_said([]) == "no compile" and cache_said(["fx miss, aot miss"]) == "cold"
    assert cache_said(["fx hit, aot hit"]) == "served by inductor's caches" and cache_said(["", ""]) == "all 2 cold"
    assert cache_said(["fx hit, aot hit", "fx miss, aot hit"]) == "1 of 2 served by inductor's caches, 1 cold"


def test_a_one_token_input_is_a_graph_of_its_own_and_says_why(fresh_service):
    track, _ = _timeline(fresh_service, CompileOptions("eager"), lengths=(8, 16, 1))
    assert [e.event.length for e in track.timeline] == [8, 16, 1]
    assert "specializes sizes 0 and 1" in track.timeline[-1].event.reason


def test_the_compile_pool_gives_a_session_always_the_same_worker(monkeypatch):
    from explorer.serving import placement

    monkeypatch.setattr(placement, "COMPILE_WORKERS", 3)
    monkeypatch.setattr(placement, "_compilers", [])
    sessions = [Session().id for _ in range(30)]
    chosen = [placement.compile_service(s) for s in sessions]
    assert len(placement._compilers) == 3 and {id(c) for c in chosen} == {id(c) for c in placement._compilers}
    # the same worker for a session each time, and nothing started yet
    assert all(placement.compile_service(s) is c for s, c in zip(sessions, chosen, strict=True))


@pytest.mark.parametrize(("options", "message"), [
    ({"mark_dynamic": 10**7}, "mark_dynamic must be true or false; got 10000000"),
    ({"fullgraph": "x"}, "fullgraph must be true or false; got 'x'"),
    ({"backend": ["inductor"]}, "backend must be one of inductor, aot_eager, eager"),
    ({"dynamic": "d" * 1000}, "…"),  # echoed back at most 80 characters
])
def test_compile_options_refuse_what_is_not_a_switch_or_a_choice_before_any_work(options, message):
    with pytest.raises(InputError) as e:
        CompileOptions(**options)
    assert message in str(e.value) and len(str(e.value)) < 200
    assert CompileOptions(mark_dynamic=True).label() == "inductor (dynamic=auto, mark_dynamic)"


def test_while_the_run_on_screen_compiles_its_cards_wait_and_no_earlier_figure_stays():
    from explorer.views.compiled import COMPILED_CARDS, compiled_cards, pending_cards

    assert [label for label, _, _ in compiled_cards(_run(2.0, 1.0))] == list(COMPILED_CARDS)
    waiting = pending_cards("rnn loop=scan", 131)
    assert [label for label, _, _ in waiting] == list(COMPILED_CARDS)
    assert {v for _, v, _ in waiting} == {"…"} and all(d == "compiling rnn loop=scan, 131 tokens" for *_, d in waiting)
    served = dict((k, d) for k, _, d in compiled_cards(_run(2.0, 1.0)))["compile time"]  # no compile of its own
    assert "this input compiled nothing (a graph compiled before served it)" in served and "0.00 s" not in served


def test_the_compile_chart_keeps_a_long_architecture_on_a_line_of_its_own_and_counts_tokens_whole():
    from explorer.views.figures import compiled_figure

    run = replace(_run(2.0, 1.0), arch="rnn cell=lstm bidirectional=True layers=4 hidden=512 embed=512")
    figure = compiled_figure([run])
    first, second = figure.layout.title.text.split("<br>")
    assert first.startswith("Eager vs compiled forward (cpu, ") and "hidden=512 embed=512" in second
    assert figure.layout.xaxis.tickformat == ",d" and float(figure.layout.xaxis.dtick).is_integer()
