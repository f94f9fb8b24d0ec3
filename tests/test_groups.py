"""The scheduler's order (tests/groups.py): the groups the test processes share out, the longest first by the last
full run's seconds, a group that run did not have by its count of tests."""

from tests.groups import DURATIONS, group_of, longest_first, recorded


def test_the_groups_go_longest_first_and_a_new_one_by_its_count_of_tests():
    ids = ["tests/a.py::x", "tests/b.py::y", "tests/c.py::w", "tests/b.py::z", "tests/a.py::v"]
    # a.py 1 s and b.py 10 s over four tests: 2.75 s a test, so c.py's one test expects 2.75 s
    assert longest_first(ids, {"tests/a.py": 1.0, "tests/b.py": 10.0}) == [
        "tests/b.py::y", "tests/b.py::z", "tests/c.py::w", "tests/a.py::x", "tests/a.py::v"]
    assert longest_first(ids, {}) == ["tests/a.py::x", "tests/a.py::v", "tests/b.py::y", "tests/b.py::z",
                                      "tests/c.py::w"]  # nothing recorded: by count of tests, ties as collected
    assert longest_first(ids[1:], {})[-1] == "tests/a.py::v"  # (one test of a.py left: after b.py's two)


def test_the_recorded_seconds_name_groups_of_this_suite():
    seconds = recorded()
    assert DURATIONS.exists() and seconds["app"] == max(seconds.values())  # the shared app's group: the longest
    assert group_of("tests/app/test_browser.py::t") == "app" and all(s >= 0 for s in seconds.values())
