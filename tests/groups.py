"""The units the test processes share out (tests/conftest.py's scheduler; bench/suite.py sums the seconds by them).
Free of side effects, unlike conftest.py (which sets the test processes' environment when imported)."""


def group_of(nodeid: str) -> str:
    """The unit the test processes share out: a file's tests together (its module fixtures start once), the browser
    modules together (their one app per process, tests/app/conftest.py, starts once), and each benchmark script on
    its own (a minute or so each: better spread than kept in one file)."""
    path, _, rest = nodeid.partition("::")
    if path.startswith("tests/bench/") and "[" in rest:
        return f"bench:{rest}"
    if path.startswith("tests/app/test_browser"):
        return "browser"
    return path
