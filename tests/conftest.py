import os
from collections import Counter

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# Each test process measures on its own core: the engine times on the first of its allowed cores and keeps its
# other work (compile workers, server threads) on the rest, so two test processes left to the same order would
# queue their timings on one core while the other idles. Rotating the order per xdist worker spreads them; read
# by explorer.core.machine at its import, before any test imports the engine. Apps the tests start get the same.
_cores = sorted(os.sched_getaffinity(0))
_turn = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % len(_cores)
os.environ.setdefault("GE_ALLOWED_CORES_", ",".join(map(str, _cores[_turn:] + _cores[:_turn])))


def pytest_collection_modifyitems(items: list) -> None:
    """The files with the most slow tests first, the quick ones last: xdist hands out whole files in this order, and
    a long file collected late (the bench scripts', alphabetically last) would run alone at the end while the
    other process idles. A stable sort: each file's tests stay together and in order."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])
