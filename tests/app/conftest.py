"""The app's tests' fixtures: the process's shared app (tests/conftest.py) by module, its log joined to a failed
test's report; Debian's Chromium at a projector's size for the browser scenarios. A failed test's
report carries what the browser said (script errors, console errors, server errors, printed as they happen) and the
end of the server's log: a flake seen once in CI is then read, not guessed."""

from pathlib import Path

import pytest

from tests.app.browser import counting_shown
from tests.conftest import App
from tests.helpers import ARGS, ensure_chromium

SERVER_LOGS: dict[str, Path] = {}  # a test file's app: its log
LOG_LINES = 80


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": ensure_chromium(), "args": ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 720}}  # a projector


@pytest.fixture(scope="module")
def app_url(request, shared_app: App) -> str:
    SERVER_LOGS[request.module.__name__] = shared_app.log
    return shared_app.url


@pytest.fixture(scope="module")
def app_log(shared_app: App) -> Path:
    return shared_app.log


@pytest.fixture
def context(context):
    return counting_shown(context)


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
