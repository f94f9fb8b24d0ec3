"""Whether this server runs code its visitors send (the Code tab): only where the operator said so.

Running a visitor's code is giving them a shell, walled in (explorer/core/confine.py) but a shell: off by default;
`--allow-code` or GE_ALLOW_CODE=1 on a server that listens on this machine only (127.0.0.1, localhost, ::1), and
GE_ALLOW_CODE=public on one that listens on a network (a classroom whose teacher trusts the room), and only with
every wall up: where this machine's kernel lacks one (`confine.offered()`), public refuses to start unless the
operator names the gap with GE_ALLOW_CODE=public-unwalled."""

from __future__ import annotations

import os

from explorer.core.confine import offered

ENV = "GE_ALLOW_CODE"
UNWALLED = "public-unwalled"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def code_allowed(host: str) -> bool:
    """Whether the Code tab exists on a server listening on `host`; SystemExit with the reason when the operator
    asked for it where it would be open to a network without saying so."""
    said = os.environ.get(ENV, "0").strip().lower()
    if said in ("", "0", "false", "no"):
        return False
    if said not in ("1", "true", "yes", "public", UNWALLED):
        raise SystemExit(f"{ENV} must be 0, 1, public or {UNWALLED}; got {said!r}")
    walls = offered()
    if said == "public" and walls.missing:
        raise SystemExit(f"{ENV}=public runs visitors' code for a network, and this machine's kernel lacks some of "
                         f"the walls around it: {', '.join(walls.missing)} ({walls.said()}). Set {ENV}={UNWALLED} "
                         "to run it without them, or run on a kernel with Landlock (Linux 6.12 or later for every "
                         "wall) and seccomp")
    if said in ("public", UNWALLED):
        return True
    if host not in LOOPBACK:
        raise SystemExit(f"{ENV}=1 runs visitors' code, and this server listens on {host}, not only on this machine: "
                         f"set {ENV}=public if everyone who can open the page may run code on it, or listen on "
                         "127.0.0.1")
    return True
