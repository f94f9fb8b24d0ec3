"""The operator's switch for visitors' code, as an operator meets it: `--allow-code` sets it, and a server that
would be open to a network with it on stops at start-up with the reason, before anything starts."""

import os
import subprocess
import sys

import pytest

from explorer.code.allowed import ENV
from explorer.ui.app import add_models
from tests.helpers import ROOT

pytestmark = pytest.mark.owns_app  # start-up refusals: an app that must not start


def test_allow_code_on_the_command_line_turns_it_on(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    add_models([])
    assert ENV not in os.environ
    add_models(["--allow-code"])
    assert os.environ[ENV] == "1"


def test_a_network_address_with_code_allowed_stops_the_start_up_with_the_reason():
    env = {**os.environ, ENV: "1", "GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "1"}
    done = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "GE_ALLOW_CODE=public" in done.stderr and "Traceback" not in done.stderr
