"""A pytest plugin for `python -m bench.suite` (`-p bench.cpu_per_test`): each test's CPU seconds, its test process's
and every process under it (the apps it started, their workers, Chromium), written one line per test to the file
`GE_TEST_CPU_OUT` names (each test process appends its own), with when it started and ended (bench/suite.py
charges the machine's idle seconds to the tests running while the cores idled).

Read from /proc around each test: a process's own CPU seconds, and what its children it waited for used (cutime).
A test's figure: what every process of the tree at its end used during it (all of it for one that started
meanwhile, with the children it reaped), less, for each that was there at its start and was reaped meanwhile, what
it had used before the test (its parent's cutime took all of its seconds). What the tree used for another test
process (one app shared by both) is counted where it ran; a test's seconds include its fixtures' set-up."""

from __future__ import annotations

import os
import time

import pytest

CLOCK = os.sysconf("SC_CLK_TCK")


def stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (state first: field 3 of proc(5) is index 0); raises
    OSError once the process is gone."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(") ", 1)[1].split()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            tree.setdefault(int(stat(pid)[1]), []).append(int(pid))
        except (OSError, IndexError):
            continue
    return tree


def _cpu(pid: int) -> tuple[float, float]:
    """A process's own CPU seconds and its reaped children's, (0, 0) once it is gone."""
    try:
        fields = stat(pid)
        return (int(fields[11]) + int(fields[12])) / CLOCK, (int(fields[13]) + int(fields[14])) / CLOCK
    except (OSError, IndexError):
        return 0.0, 0.0


def tree_cpu(root: int) -> dict[int, tuple[float, float]]:
    """Every live process under `root` (itself included): its own CPU seconds and its reaped children's."""
    tree, out, todo = _children(), {}, [root]
    while todo:
        pid = todo.pop()
        out[pid] = _cpu(pid)
        todo += tree.get(pid, [])
    return out


def used(before: dict[int, tuple[float, float]], after: dict[int, tuple[float, float]]) -> float:
    """The tree's CPU seconds between two readings (see the module's docstring)."""
    grown = sum(own + children - sum(before.get(pid, (0.0, 0.0))) for pid, (own, children) in after.items())
    return grown - sum(own for pid, (own, _) in before.items() if pid not in after)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    before, start = tree_cpu(os.getpid()), time.time()
    try:
        return (yield)
    finally:
        seconds = used(before, tree_cpu(os.getpid()))
        with open(os.environ["GE_TEST_CPU_OUT"], "a") as out:
            out.write(f"{seconds:.2f}\t{start:.2f}\t{time.time():.2f}\t{item.nodeid}\n")
