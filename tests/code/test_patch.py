"""An edit as a link: read back exactly, refused when made for another file or forged, and none for a rewrite."""

import base64
import hashlib
import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.code.edits import CodeEdits
from explorer.code.patch import MAX_LINK_CHARS, applied, encoded
from explorer.core.errors import InputError
from explorer.core.limits import MAX_TEXT_CHARS
from tests.helpers import ROOT

RNN = (ROOT / "models" / "rnn.py").read_text()
lines = st.lists(st.sampled_from(["x = 1\n", "    y = x\n", "if x:\n", "\n", "return y\n", "z"]), max_size=30)


@given(lines, lines)
def test_any_edit_reads_back_exactly(a, b):
    original, edited = "".join(a), "".join(b)
    token = encoded(original, edited)
    assert token is not None and applied(original, token) == edited


def test_a_few_changed_lines_make_a_short_link_and_a_rewrite_none():
    edited = RNN.replace("new = cell(x, state)", "new = cell(x, cell(x, state))")
    token = encoded(RNN, edited)
    assert token is not None and len(token) < 300 and applied(RNN, token) == edited
    assert encoded(RNN, "\n".join(f"w{i} = {i * 7919}" for i in range(2000))) is None  # past MAX_LINK_CHARS


def test_a_link_is_given_up_to_max_link_chars_and_not_one_character_past():
    """Edits growing a line at a time: every token given is at most MAX_LINK_CHARS long, and the first edit refused
    is the first whose token would pass it (its length read from the same encoding, uncapped)."""
    from unittest import mock

    given, refused = 0, None
    for n in range(1, 400):
        edited = RNN + "".join(f"# {hashlib.sha256(str(i).encode()).hexdigest()}\n" for i in range(n))
        token = encoded(RNN, edited)
        if token is None:
            with mock.patch("explorer.code.patch.MAX_LINK_CHARS", 10**9):
                refused = len(encoded(RNN, edited))
            break
        assert len(token) <= MAX_LINK_CHARS and applied(RNN, token) == edited
        given = max(given, len(token))
    assert refused is not None and refused > MAX_LINK_CHARS >= given > 0.9 * MAX_LINK_CHARS


def test_a_link_for_another_file_or_a_forged_one_is_refused_in_one_line():
    token = encoded(RNN, RNN + "# mine\n")
    with pytest.raises(InputError, match="another version of the model's file"):
        applied(RNN.replace("Unrolled", "Rolled"), token)
    forged = encoded(RNN, RNN + "# mine\n")
    beyond = base64.urlsafe_b64encode(zlib.compress(json.dumps(
        {"of": json.loads(zlib.decompress(base64.urlsafe_b64decode(forged + "=" * (-len(forged) % 4))))["of"],
         "ops": [[10**6, 10**6 + 1, "x"]]}).encode())).decode()  # lines the file does not have
    for bad in ("not-base64!", "eJzLSM3JyVcozy_KSQEAGgQEXQ", "", beyond):
        with pytest.raises(InputError, match="not an edit this app made"):
            applied(RNN, bad)


def test_a_token_that_would_inflate_past_any_editable_file_is_refused_unread():
    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * (4 * MAX_TEXT_CHARS + 1), 9)).decode()
    assert len(bomb) < 4000  # a short address
    with pytest.raises(InputError, match="not an edit this app made"):
        applied(RNN, bomb)


def test_an_edited_file_past_the_request_limit_is_refused_before_the_worker_sees_it():
    with pytest.raises(InputError, match="GE_MAX_TEXT_CHARS"):
        next(CodeEdits.of("rnn").run("#" * (MAX_TEXT_CHARS + 1), {}, "hi", worker=None))  # type: ignore[arg-type]
