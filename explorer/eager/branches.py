"""Which way each branch of the model's Python went: for one input, and across the inputs a session ran.

Define-by-run: an `if` that went one way leaves the other branch out of the graph, a loop's count is its length in
the graph. The forks are read from the model's own files (`ast`: every `if`, `for` and `while`); which way each
went is read from the lines that ran (explorer/eager/lines.py): an `if` line that ran with its body not run was not
taken; a loop's body ran as many times as its first line. A fork whose line read a tensor's value into Python
(`bool(t)`, `.item()`, `int(t)`) was decided by the data, not by the code or the config."""

from __future__ import annotations

import ast
import linecache
from collections.abc import Sequence
from dataclasses import dataclass

from explorer.core.fmt import count
from explorer.eager.lines import LinesRan

KINDS = {ast.If: "if", ast.For: "for", ast.While: "while"}


@dataclass(frozen=True)
class Fork:
    file: str  # as the lines show it
    line: int
    kind: str  # "if", "for" or "while"
    code: str
    body: int  # the body's first line
    orelse: int  # the else branch's first line (an `elif` is an `if` there), or 0


@dataclass(frozen=True)
class Went:
    """One fork for one input."""

    reached: int  # times its line ran (an `if` once per test; a loop once per iteration, and once to leave)
    body: int  # times its body ran
    orelse: int  # times its else branch ran
    by_data: bool  # its line read a tensor's value

    def said(self, kind: str) -> str:
        if not self.reached:
            return "not reached"
        if kind == "if":
            said = ("taken" if self.body == self.reached else "not taken" if not self.body else
                    f"taken {self.body} of {self.reached} times")
            said += " (else taken)" if self.orelse and not self.body else ""
        else:
            said = f"body ran {count(self.body, 'time')}" if self.body else "body never ran"
        return said + (", decided by data" if self.by_data else "")


def _forks(path: str, shown: str) -> tuple[Fork, ...]:
    """The forks of a file (`path` to read, `shown` as the lines name it), those on one line left out: a body on
    its `if` line cannot be told apart from it by the lines that ran."""
    source = "".join(linecache.getlines(path))  # a file on disk, or the Code tab's edit (held in linecache)
    lines = source.splitlines()
    forks = []
    for node in ast.walk(ast.parse(source)):
        kind = KINDS.get(type(node))
        if kind is None or node.body[0].lineno == node.lineno:
            continue
        orelse = node.orelse[0].lineno if node.orelse else 0
        forks.append(Fork(shown, node.lineno, kind, lines[node.lineno - 1].strip(), node.body[0].lineno, orelse))
    return tuple(sorted(forks, key=lambda f: f.line))


def forks_of(lines: LinesRan) -> tuple[Fork, ...]:
    """The forks of the model's files."""
    return tuple(f for shown, path in lines.paths for f in _forks(path, shown))


def went(fork: Fork, lines: LinesRan) -> Went:
    return Went(lines.ran(fork.file, fork.line), lines.ran(fork.file, fork.body),
                lines.ran(fork.file, fork.orelse) if fork.orelse else 0, (fork.file, fork.line) in lines.reads)


@dataclass(frozen=True)
class Across:
    """One fork over a session's inputs: this input's way, and the others'."""

    fork: Fork
    now: Went
    taken_by: tuple[str, ...]  # the inputs whose run took it (an `if`'s body ran; a loop's body ran)
    not_taken_by: tuple[str, ...]  # the inputs whose run reached it and did not
    by_data: bool  # any input's run read a tensor's value at it

    def said(self) -> str:
        n = len(self.taken_by) + len(self.not_taken_by)
        if not n:
            return "no earlier input reached it"
        verb = "took it" if self.fork.kind == "if" else "ran its body"
        said = f"{len(self.taken_by)} of {n} earlier inputs {verb}"
        if self.taken_by and self.not_taken_by:
            said += f" (e.g. {self.taken_by[-1]!r}; not {self.not_taken_by[-1]!r})"
        return said + (", decided by data" if self.by_data else "")


def across(forks: Sequence[Fork], now: LinesRan, inputs: Sequence[tuple[str, LinesRan]]) -> list[Across]:
    """Each fork reached by this input or any of `inputs` ((text, its lines), the session's runs), in file order."""
    out = []
    for fork in forks:
        ways = [(text, went(fork, lines)) for text, lines in inputs]
        ways = [(text, w) for text, w in ways if w.reached]
        this = went(fork, now)
        if not ways and not this.reached:
            continue
        out.append(Across(fork, this, tuple(t for t, w in ways if w.body), tuple(t for t, w in ways if not w.body),
                          this.by_data or any(w.by_data for _, w in ways)))
    return out
