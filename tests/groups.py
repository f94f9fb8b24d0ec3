"""The units the test processes share out (tests/conftest.py's scheduler; bench/suite.py sums the seconds by them).
Free of side effects, unlike conftest.py (which sets the test processes' environment when imported)."""


# The tests on the shared app (tests/conftest.py): one group, so one process runs them all on one app. Split over
# the two processes they took 150 s more (two browsers and two apps contending, measured in one run). The longest
# group, and the one with the most tests (178), which xdist's scheduler hands out first (it orders groups by their
# count of tests): the other process shares out the rest meanwhile.
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
