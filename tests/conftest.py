import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# Each test process measures on its own core: the engine times on the first of its allowed cores and keeps its
# other work (compile workers, server threads) on the rest, so two test processes left to the same order would
# queue their timings on one core while the other idles. Rotating the order per xdist worker spreads them; read
# by explorer.core.machine at its import, before any test imports the engine. Apps the tests start get the same.
_cores = sorted(os.sched_getaffinity(0))
_turn = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % len(_cores)
os.environ.setdefault("GE_ALLOWED_CORES_", ",".join(map(str, _cores[_turn:] + _cores[:_turn])))
