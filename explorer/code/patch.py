"""An edit as a link: the changed lines against the shipped file, compressed, with a hash of the file it was made
against (a link made for another version of the model's file is refused, not misapplied). Too long an edit gets
no link: a link is for a few changed lines, not a rewrite."""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
import json
import zlib

from explorer.core.errors import InputError
from explorer.core.limits import MAX_TEXT_CHARS

MAX_EDIT_BYTES = 4 * MAX_TEXT_CHARS  # what a token may inflate to: an edit of a file the editor would take
MAX_LINK_CHARS = 2000  # the encoded edit: browsers and chat tools keep links far longer, people do not read them


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def encoded(original: str, edited: str) -> str | None:
    """The edit as a URL-safe token, or None when it is longer than MAX_LINK_CHARS."""
    a, b = original.splitlines(keepends=True), edited.splitlines(keepends=True)
    ops = [[i1, i2, "".join(b[j1:j2])] for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False)
           .get_opcodes() if tag != "equal"]
    raw = json.dumps({"of": _sha(original), "ops": ops}, separators=(",", ":")).encode()
    token = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    return token if len(token) <= MAX_LINK_CHARS else None


def applied(original: str, token: str) -> str:
    """The edited source a token describes; InputError for a token that is not one, or was made for another
    version of the file."""
    try:
        inflate = zlib.decompressobj()  # bounded: a token of a few KB must not inflate to gigabytes in the server
        raw = inflate.decompress(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)), MAX_EDIT_BYTES)
        if inflate.unconsumed_tail:
            raise ValueError("too long")
        edit = json.loads(raw)
        ops, of = edit["ops"], edit["of"]
    except (ValueError, zlib.error, binascii.Error, KeyError, TypeError):
        raise InputError("the link's code parameter is not an edit this app made") from None
    if of != _sha(original):
        raise InputError("the link's edit was made for another version of the model's file: the file as shipped "
                         "is shown instead")
    a, out, at = original.splitlines(keepends=True), [], 0
    try:
        for i1, i2, lines in ops:
            if not (at <= i1 <= i2 <= len(a)) or not isinstance(lines, str):
                raise ValueError
            out += [*a[at:i1], lines]
            at = i2
    except (ValueError, TypeError):
        raise InputError("the link's code parameter is not an edit this app made") from None
    return "".join([*out, *a[at:]])
