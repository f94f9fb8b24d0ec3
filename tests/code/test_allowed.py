"""Who may run code: off by default, on where the operator said so, and refused at start-up where it would be open
to a network without the operator saying so."""

import pytest

from explorer.code.allowed import ENV, UNWALLED, code_allowed
from explorer.core.confine import OFF_ENV


@pytest.mark.parametrize(("said", "host", "allowed"), [
    (None, "127.0.0.1", False), ("0", "0.0.0.0", False), ("1", "127.0.0.1", True), ("1", "localhost", True),
    ("public", "0.0.0.0", True), ("public", "127.0.0.1", True),
])
def test_the_code_tab_exists_only_where_the_operator_allows_it(monkeypatch, said, host, allowed):
    if said is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, said)
    assert code_allowed(host) is allowed


def test_allowing_code_on_a_network_address_without_saying_public_stops_the_start_up(monkeypatch):
    monkeypatch.setenv(ENV, "1")
    with pytest.raises(SystemExit, match=r"listens on 0\.0\.0\.0.*GE_ALLOW_CODE=public"):
        code_allowed("0.0.0.0")
    monkeypatch.setenv(ENV, "maybe")
    with pytest.raises(SystemExit, match="must be 0, 1, public or public-unwalled"):
        code_allowed("127.0.0.1")


def test_public_refuses_to_start_where_a_wall_is_missing_unless_the_operator_names_the_gap(monkeypatch):
    monkeypatch.setenv(OFF_ENV, "landlock-scope")  # as on a kernel before Landlock's ABI 6
    monkeypatch.setenv(ENV, "public")
    with pytest.raises(SystemExit, match=f"lacks some of the walls around it: landlock-scope .*{ENV}={UNWALLED}"):
        code_allowed("0.0.0.0")
    monkeypatch.setenv(ENV, UNWALLED)
    assert code_allowed("0.0.0.0") is True
    monkeypatch.setenv(ENV, "1")  # on this machine only: said in the log, not refused
    assert code_allowed("127.0.0.1") is True
    monkeypatch.setenv(OFF_ENV, "")
    monkeypatch.setenv(ENV, "public")
    assert code_allowed("0.0.0.0") is True  # every wall up
