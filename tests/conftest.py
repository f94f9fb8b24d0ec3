import gc
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from tests.groups import group_of, longest_first, recorded

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# One torch thread per test process, as the app, the CLI and the workers pin (explorer.core.machine.pin_threads):
# two test processes on two cores with torch's default of a thread per core stalled each other's OpenMP teams (a
# probe's 32-token train step took 0.85 s, not 0.03 s) and doubled the time of the in-process tests (tests/views,
# eager, runs and draw: 24.5 s, 11.5 s with one thread). Set before anything imports torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Each test process measures on its own core: the engine times on the first of its allowed cores and keeps its
# other work (compile workers, server threads) on the rest, so two test processes left to the same order would
# queue their timings on one core while the other idles. Rotating the order per xdist worker spreads them; read
# by explorer.core.machine at its import, before any test imports the engine. Apps the tests start get the same.
_cores = sorted(os.sched_getaffinity(0))
_turn = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % len(_cores)
os.environ.setdefault("GE_ALLOWED_CORES_", ",".join(map(str, _cores[_turn:] + _cores[:_turn])))


# The operator's model files: the shipped examples, and one that crashes its worker past 40 tokens (test_app).
MODEL_FILES = ("examples/lstm_tagger.py", "examples/image_cnn.py", "tests/outside/crashing.py")


@dataclass(frozen=True)
class App:
    url: str
    log: Path
    proc: subprocess.Popen


@pytest.fixture(scope="session")
def shared_app(tmp_path_factory) -> App:
    """One app per test process for every test that does not need one of its own (the browser's, the API's, the
    hostile inputs', the quick runs of the benchmarks that start one), with what they need between them: the
    operator's model files in the menu and the Code tab on. Each start costs the suite about 15 CPU-seconds (the
    app's imports, its fork server's, its workers')."""
    from tests.helpers import ROOT, start_app, stop_app  # (not at the top: it imports the engine, which reads the
    # cores set above when it is imported)

    log = tmp_path_factory.mktemp("app") / "server.log"
    # a code build's bound well past this machine's slow spells (its 20 s default timed out once in CI while the
    # other test process loaded the machine): the tests check what an edit builds, not how fast
    proc, url, _ = start_app({"GE_MODELS": ",".join(str(ROOT / f) for f in MODEL_FILES), "GE_ALLOW_CODE": "1",
                              "GE_CODE_TIMEOUT_S": "90"}, shared=True, log=log)
    yield App(url, log, proc)
    stop_app(proc)


@pytest.fixture(scope="session")
def measured_claims(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """Every claim's quick experiment, measured once per test run by whichever test process asks first, in the
    board's file (the claims' tests read it back; a test app restores it): eight runs of about 30 s, not one per
    process."""
    from dataclasses import replace

    from explorer.api import workers
    from explorer.claims.board import CLAIMS, ClaimBoard

    shared = tmp_path_factory.getbasetemp()
    path = (shared if worker_id == "master" else shared.parent) / "claims.json"
    with FileLock(f"{path}.lock"):
        if not path.exists():
            w = replace(workers(), quick=True)
            try:
                board = ClaimBoard(path=path, quick=True)
                for c in CLAIMS:
                    list(board.run(c, w))
            finally:
                w.stop()
    return path


@pytest.fixture
def menu_restored(monkeypatch: pytest.MonkeyPatch) -> object:
    """A model file added by a test leaves the model menu (and the variable children read) as it was."""
    from explorer.sources.registry import MODELS_ENV, SOURCES

    monkeypatch.setenv(MODELS_ENV, "")  # (restored, or removed, afterwards: delenv of an absent one is not)
    before = dict(SOURCES)
    yield
    SOURCES.clear()
    SOURCES.update(before)


@pytest.fixture(autouse=True)
def menu_kept(request: pytest.FixtureRequest) -> object:
    """A test that adds a model to the menu (a file, a notebook object) and does not restore it fails here, naming
    the model: a later test in the same process would read the menu it left (a refusal listing the models grew)."""
    from explorer.sources.registry import SOURCES

    before = set(SOURCES)
    yield
    if "menu_restored" not in request.fixturenames:
        left = set(SOURCES) - before
        assert not left, f"the test left {sorted(left)} in the model menu: use the menu_restored fixture"


RUNNING: list[pytest.Item] = []  # the test being set up or run (tests.helpers.start_app reads its marks)


def pytest_runtest_setup(item: pytest.Item) -> None:
    RUNNING[:] = [item]


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """What the run left alive (dynamo's caches, the apps' clients: millions of objects) out of the cycle collector's
    reach before pytest's last collections (they look for exceptions raised in finalizers): each walked the whole
    heap, 4.7 CPU-s per collection, two per test process, at the very end of the run (py-spy over the suite)."""
    gc.freeze()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The groups in the order the scheduler hands them out: the longest first (tests/groups.py)."""
    order = {nodeid: i for i, nodeid in enumerate(longest_first([item.nodeid for item in items], recorded()))}
    items.sort(key=lambda item: order[item.nodeid])


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's scheduling by file, with the groups of `group_of` as the files (its own --dist loadgroup does not
    group under pytest 9: its marks reach no node id), in the order collected (longest first), not by count."""
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False
    return Groups(config, log)
