"""The app's tests' fixtures: the real app, one per test process, that every module here shares but those that must
own one (marked `owns_app`); Debian's Chromium at a projector's size for the browser scenarios. A failed test's
report carries what the browser said (script errors, console errors, server errors, printed as they happen) and the
end of the server's log: a flake seen once in CI is then read, not guessed."""

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ARGS, ROOT, ensure_chromium, start_app, stop_app

SERVER_LOGS: dict[str, Path] = {}  # a test file's app: its log
# The operator's model files: the shipped examples, and one that crashes its worker past 40 tokens (test_app).
MODEL_FILES = ("examples/lstm_tagger.py", "examples/image_cnn.py", "tests/outside/crashing.py")
LOG_LINES = 80


@dataclass(frozen=True)
class App:
    url: str
    log: Path
    proc: subprocess.Popen


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": ensure_chromium(), "args": ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 720}}  # a projector


@pytest.fixture(scope="session")
def shared_app(tmp_path_factory) -> App:
    """One app per test process for the modules here (the browser's, the API's, the hostile inputs'), with what they
    need between them: the operator's model files in the menu and the Code tab on. Each start costs the suite about
    15 CPU-seconds (the app's imports, its fork server's, its workers')."""
    log = tmp_path_factory.mktemp("app") / "server.log"
    # a code build's bound well past this machine's slow spells (its 20 s default timed out once in CI while the
    # other test process loaded the machine): the tests check what an edit builds, not how fast
    proc, url, _ = start_app({"GE_MODELS": ",".join(str(ROOT / f) for f in MODEL_FILES), "GE_ALLOW_CODE": "1",
                              "GE_CODE_TIMEOUT_S": "90"}, shared=True, log=log)
    yield App(url, log, proc)
    stop_app(proc)


@pytest.fixture(scope="module")
def app_url(request, shared_app: App) -> str:
    SERVER_LOGS[request.module.__name__] = shared_app.log
    return shared_app.url


@pytest.fixture(scope="module")
def app_log(shared_app: App) -> Path:
    return shared_app.log


@pytest.fixture
def page(page):
    """Playwright's page, printing what went wrong in the browser as it happens (shown when the test fails)."""
    page.on("pageerror", lambda error: print(f"browser script error: {error}"))
    page.on("console", lambda m: m.type == "error" and print(f"browser console error: {m.text}"))
    page.on("response", lambda r: r.status >= 500 and print(f"server error {r.status}: {r.request.method} {r.url}"))
    return page


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    log = SERVER_LOGS.get(item.module.__name__)
    if report.when == "call" and report.failed and log is not None and log.exists():
        lines = log.read_text(errors="replace").splitlines()[-LOG_LINES:]
        report.sections.append((f"the app's log (last {LOG_LINES} lines)", "\n".join(lines)))
    return report
