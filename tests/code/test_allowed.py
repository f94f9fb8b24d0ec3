"""Who may run code: off by default, on where the operator said so, and refused at start-up where it would be open
to a network without the operator saying so."""

import pytest

from explorer.code.allowed import ENV, code_allowed


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
    with pytest.raises(SystemExit, match="must be 0, 1 or public"):
        code_allowed("127.0.0.1")
