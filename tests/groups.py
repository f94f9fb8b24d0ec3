"""The units the test processes share out (tests/conftest.py's scheduler; bench/suite.py sums the seconds by them).
Free of side effects, unlike conftest.py (which sets the test processes' environment when imported)."""


# The modules on a test process's shared app (tests/app/conftest.py), in two groups of about four minutes each: the
# two test processes each take one first (tests/conftest.py) and start one app each.
SHARED_APP_GROUPS = {
    "app:playground": ("tests/app/test_browser.py", "tests/app/test_app.py"),
    "app:labs": ("tests/app/test_browser_labs.py", "tests/app/test_browser_code.py",
                 "tests/app/test_browser_lessons.py", "tests/app/test_browser_bench.py", "tests/app/test_hostile.py"),
}


def group_of(nodeid: str) -> str:
    """The unit the test processes share out: a file's tests together (its module fixtures start once), the modules
    on the shared app in two groups (each process starts its app once), and each benchmark script on its own (a
    minute or so each: better spread than kept in one file)."""
    path, _, rest = nodeid.partition("::")
    if path.startswith("tests/bench/") and "[" in rest:
        return f"bench:{rest}"
    return next((group for group, paths in SHARED_APP_GROUPS.items() if path in paths), path)
