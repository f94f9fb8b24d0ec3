"""A Playground run as the application orchestrates it, before any view: typed results in order, real models."""

from explorer.core.progress import Progress
from explorer.runs.playground import Planned, run
from explorer.runs.session import RunResult, Session


def test_a_run_yields_its_graph_first_then_its_timed_result():
    session = Session()
    steps = list(run(session, "tree", "(a b) c", "", {"hidden": 8}))
    planned = next(s for s in steps if isinstance(s, Planned))
    result = steps[-1]
    assert steps.index(planned) < len(steps) - 1 and isinstance(result, RunResult)
    assert planned.captured.capture is result.capture and result.forward.runs > 0
    assert session.last is result and session.history[-1].number == result.number


def test_an_unchanged_input_and_an_empty_box_are_said_not_run():
    session = Session()
    list(run(session, "rnn", "hello", "", {}))
    again = list(run(session, "rnn", "hello", "", {}))
    assert len(again) == 1 and isinstance(again[0], Progress) and again[0].phase.startswith("Run 1 is this input")
    empty = list(run(session, "rnn", "", "", {}))
    assert isinstance(empty[0], Progress) and empty[0].phase.startswith("**Not run**")
    assert session.last.input.text == "hello"


def test_another_architecture_runs_again_and_is_diffed_against_the_previous_run():
    session = Session()
    list(run(session, "rnn", "hello", "", {}))
    *_, result = run(session, "rnn", "hello", "", {"layers": 2})
    assert isinstance(result, RunResult) and result.diff is not None and "layers 1->2" in result.diff.label


def test_typing_draws_every_step_but_the_history_and_the_diff_keep_what_stayed(monkeypatch):
    session = Session()
    list(run(session, "rnn", "The cat sat.", "", {}))  # the page's first run
    for text in ("The cat sat. The", "The cat sat. The d"):  # typed, no pause between runs
        *_, last = run(session, "rnn", text, "", {}, keyed=True)
    assert isinstance(last, RunResult) and session.last is last  # every step is drawn
    assert [r.tokens for r in session.history] == [12, 18]  # the partial "The" was replaced by "The d"
    assert "previous input (12 tokens) -> this input (18 tokens)" in last.diff.label  # against what stayed
    session.settle()  # Enter, or the box left: the partial one is meant now
    *_, nxt = run(session, "rnn", "The cat sat. The do", "", {}, keyed=True)
    assert [r.tokens for r in session.history] == [12, 18, 19] and "(18 tokens) -> " in nxt.diff.label
    monkeypatch.setattr("explorer.runs.session.SETTLE_S", 0.0)  # a pause longer than SETTLE_S: it stayed too
    *_, paused = run(session, "rnn", "The cat sat. The dog", "", {}, keyed=True)
    assert len(session.history) == 4 and "(19 tokens) -> " in paused.diff.label
    list(run(session, "rnn", "A deliberate call", "", {}))  # an API call, a control, a link: stays at once
    list(run(session, "rnn", "Another one", "", {}))
    assert len(session.history) == 6


def test_a_lab_runs_on_the_run_on_screen_not_the_latest_timed_one_and_says_which():
    """The RNN timed with its Python loop, then switched to loop=scan and captured but not (yet) timed: a lab that
    needs the Playground's run takes the scan model on screen, and its header names it in full."""
    from explorer.labs.contract import Needs
    from explorer.ui.labs import playground_subject, subject_line

    s = Session()
    s.configure("rnn", {})
    s.run("The cat sat on the mat.")
    s.configure("rnn", {"loop": "scan"})
    s.capture("The cat sat.")  # its graph drawn; its timings not taken
    subject = playground_subject(s, Needs.RUN)
    assert subject.config.loop == "scan" and subject.text == "The cat sat." and s.last.config.loop == "python"
    assert subject_line(subject, Needs.RUN) == "On the Playground's run: **rnn loop=scan**, 12 tokens.\n\n"
    assert subject_line(playground_subject(s, Needs.MODEL), Needs.MODEL).startswith("On the Playground's model: **rnn")


def test_a_scan_rnn_counts_its_module_calls_not_zero_unrolled_steps():
    from explorer.views.playground import cards

    s = Session()
    s.configure("rnn", {"loop": "scan"})
    label, value, _ = cards(s.capture("The cat sat."))[1]  # what the input decided: scan unrolls nothing in Python
    assert label == "module calls" and int(value) > 0
    s.configure("rnn", {})
    assert cards(s.capture("The cat sat."))[1][:2] == ("unrolled steps per layer", "12")


def test_an_untimed_runs_raw_numbers_are_its_own_capture_not_the_previous_runs():
    from explorer.runs.playground import Planned
    from explorer.serving.plan import plan
    from explorer.views.playground import first_view

    s = Session()
    s.configure("rnn", {})
    s.run("The cat sat on the mat.")
    s.configure("rnn", {"loop": "scan"})
    captured = s.capture("The cat sat.")
    view = first_view(Planned(captured, plan(captured.capture)))
    assert view.report["config"]["loop"] == "scan" and view.report["tokens"] == 12 and view.report["eager"] is None
    assert view.report["graph"]["nodes"] == len(captured.capture.graph.nodes)
