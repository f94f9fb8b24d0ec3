"""Which way each branch went: read from the lines that ran, for the input on screen and the session's earlier
inputs on the same architecture; a branch whose line read a tensor's value is the data's decision."""

from explorer.eager.branches import went
from explorer.runs.session import Session
from explorer.views.lines import branch_rows
from explorer.views.playground import View, update
from tests.helpers import ROOT

EXITS = "The cat sat on the mat, and then it slept."  # at threshold 0.9, sure enough after block 4: it exits
STAYS = "zzzz zzzz zzzz"  # never sure enough: every block runs
CONFIG = {"threshold": 0.9}


def _line(path: str, text: str) -> int:
    return next(i for i, t in enumerate((ROOT / path).read_text().splitlines(), 1) if t.strip().startswith(text))


def test_the_early_exit_is_the_datas_decision_and_the_session_says_which_input_took_it():
    session = Session()
    for text in (EXITS, STAYS):
        assert isinstance(list(update(session, "early_exit", text, "", CONFIG))[-1], View)
    forks = {(a.fork.file, a.fork.line): a for a in session.branches()}
    exit_line = _line("models/early_exit.py", "if self.cfg.threshold < 1.0 and bool(")
    loop_line = _line("models/early_exit.py", "for i, (block, exit_head)")
    exit_fork, loop = forks[("models/early_exit.py", exit_line)], forks[("models/early_exit.py", loop_line)]
    # on screen: the last input, which never exits: its loop ran every block
    assert exit_fork.now.said("if") == "not taken, decided by data" and exit_fork.now.reached == 6
    assert loop.now.body == 6 and not loop.by_data
    # the earlier input took the exit: named as the one that would take it
    assert exit_fork.taken_by == (EXITS,) and exit_fork.not_taken_by == ()
    assert exit_fork.said() == "1 of 1 earlier inputs took it, decided by data"
    # what the config decides, not the data: the exit_with switch's `if`, reached and not taken by both
    switch = forks[("models/early_exit.py", _line("models/early_exit.py", 'if self.cfg.exit_with == "cond"'))]
    assert switch.now.said("if") == "not taken" and switch.not_taken_by == (EXITS,) and not switch.by_data
    row = next(r for r in branch_rows(session.branches()) if r[0] == f"models/early_exit.py:{exit_line}")
    assert row[2:] == ["not taken, decided by data", "1 of 1 earlier inputs took it, decided by data"]


def test_a_branch_inside_a_loop_counts_each_way_and_another_architecture_is_not_mixed_in():
    session = Session()
    list(update(session, "tree", "ab cd.", "", {}))
    list(update(session, "tree", "ab cd.", "", {"hidden": 16}))  # another architecture: its run is not compared
    clause = _line("models/tree.py", "if lead in _CLAUSE_END:")
    fork = next(a for a in session.branches() if a.fork.line == clause)
    # two words, one of them ending the only clause: tested twice, taken once
    assert (fork.now.reached, fork.now.body) == (2, 1) and fork.now.said("if") == "taken 1 of 2 times"
    assert fork.said() == "no earlier input reached it"
    lines = session.lines()
    assert went(fork.fork, lines) == fork.now and lines.ran("models/tree.py", clause) == 2
