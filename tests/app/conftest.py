"""The browser scenarios' fixtures: Debian's Chromium at a projector's size, and the real app, one per test file
(the playground's scenarios and the labs' run side by side on two test workers). A failed test's report carries
what the browser said (script errors, console errors, server errors, printed as they happen) and the end of the
server's log: a flake seen once in CI is then read, not guessed."""

from pathlib import Path

import pytest

from tests.helpers import ARGS, ensure_chromium, start_app, stop_app

SERVER_LOGS: dict[str, Path] = {}  # a test file's app: its log
EXAMPLES = "examples/lstm_tagger.py,examples/image_cnn.py"  # the shipped examples, in the menu as an operator adds them
LOG_LINES = 80


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": ensure_chromium(), "args": ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 720}}  # a projector


@pytest.fixture(scope="session")
def _browser_app(tmp_path_factory):
    """One app per test process for the browser modules (the Playground's, the labs', the Code tab's), with what
    they need between them: the shipped examples in the menu and the Code tab on."""
    log = tmp_path_factory.mktemp("app") / "server.log"
    # a code build's bound well past this machine's slow spells (its 20 s default timed out once in CI while the
    # other test process loaded the machine): the tests check what an edit builds, not how fast
    proc, url, _ = start_app({"GE_MODELS": EXAMPLES, "GE_ALLOW_CODE": "1", "GE_CODE_TIMEOUT_S": "90"}, shared=True,
                             log=log)
    yield url, log
    stop_app(proc)


@pytest.fixture(scope="module")
def app_url(request, _browser_app):
    SERVER_LOGS[request.module.__name__] = _browser_app[1]
    return _browser_app[0]


@pytest.fixture(scope="module")
def app_log(_browser_app):
    return _browser_app[1]


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
