"""The browser scenarios' fixtures: Debian's Chromium at a projector's size, and the real app, one per test file
(the playground's scenarios and the labs' run side by side on two test workers)."""

import pytest

from tests.helpers import ARGS, ensure_chromium, start_app, stop_app


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": ensure_chromium(), "args": ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 720}}  # a projector


@pytest.fixture(scope="module")
def app_url():
    proc, url, _ = start_app()
    yield url
    stop_app(proc)
