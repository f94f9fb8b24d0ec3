"""The units the test processes share out (tests/conftest.py's scheduler; bench/suite.py sums the seconds by them),
longest first. Free of side effects, unlike conftest.py (which sets the test processes' environment when imported)."""

import json
from collections import Counter
from pathlib import Path

# Each group's seconds in the latest full run of `python -m bench.suite` (which writes this file): the scheduler
# hands out the longest first, so that no long group starts last while the other process has nothing left to do
# (xdist's own order, by count of tests, put the one-test groups last: a benchmark script, the example notebook).
DURATIONS = Path(__file__).with_name("durations.json")


# The tests on the shared app (tests/conftest.py): one group, so one process runs them all on one app. Split over
# the two processes they took 150 s more (two browsers and two apps contending, measured in one run). The longest
# group (DURATIONS), so handed out first: the other process shares out the rest meanwhile.
SHARED_APP = "app"
_ON_THE_SHARED_APP = ("tests/app/test_browser", "tests/app/test_app.py", "tests/app/test_hostile.py",
                      "tests/bench/test_scripts.py::test_the_script_runs_and_writes_its_results[soak]",
                      "tests/bench/test_scripts.py::test_the_script_runs_and_writes_its_results[ddp_responsiveness]")


def group_of(nodeid: str) -> str:
    """The unit the test processes share out: a file's tests together (its module fixtures start once), the tests
    on the shared app together (one app starts), and each benchmark script on its own (a minute or so each: better
    spread than kept in one file)."""
    if nodeid.startswith(_ON_THE_SHARED_APP):
        return SHARED_APP
    path, _, rest = nodeid.partition("::")
    if path.startswith("tests/bench/") and "[" in rest:
        return f"bench:{rest}"
    return path


def longest_first(nodeids: list[str], seconds: dict[str, float]) -> list[str]:
    """`nodeids` with their groups in order of their expected seconds, longest first (each group's tests in the order
    given): its seconds in `seconds`, or for a group not in it, its count of tests times the mean seconds of a test."""
    counts = Counter(map(group_of, nodeids))
    known = [g for g in counts if g in seconds]
    per_test = sum(seconds[g] for g in known) / sum(counts[g] for g in known) if known else 1.0
    expected = {g: seconds.get(g, n * per_test) for g, n in counts.items()}
    order = {g: i for i, g in enumerate(sorted(counts, key=lambda g: -expected[g]))}
    return sorted(nodeids, key=lambda n: order[group_of(n)])


def recorded() -> dict[str, float]:
    """The groups' seconds in DURATIONS (none, if it is missing)."""
    return json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
