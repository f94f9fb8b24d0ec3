"""Property-based tests: arbitrary configs and texts never crash the engine or get past the limits."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core import limits
from explorer.core.errors import USER_ERRORS, InputError
from explorer.core.inputs import tokenize
from explorer.runs.session import Session
from models import ZOO, make_config, param_count

NAMES = sorted(ZOO)
FIELDS = sorted({k.name for e in ZOO.values() for k in e.knobs()} | {"depth", "", "__class__", "width "})
ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**12, max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["gru", "lstm", "pre", "sdpa", "text", "1e9", "nan", "-0", "3.0", "true"]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=1),
)
CONFIGS = st.dictionaries(st.sampled_from(FIELDS), ANY_VALUE, max_size=4)
# Every code point, lone surrogates and control characters included.
TEXTS = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80)


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(NAMES), values=CONFIGS)
def test_make_config_accepts_or_refuses_with_a_message(name, values):
    try:
        cfg = make_config(name, values)
    except USER_ERRORS as e:
        assert str(e) and "\n" not in str(e)
        return
    for k in ZOO[name].knobs():  # an accepted config is inside every knob's range
        v = getattr(cfg, k.name)
        if k.min is not None:
            assert k.min <= v <= k.max and math.isfinite(v)
        if k.choices:
            assert v in k.choices


@settings(max_examples=300, deadline=None)
@given(text=TEXTS)
def test_tokenize_any_text(text):
    try:
        t = tokenize(text)
    except USER_ERRORS as e:
        assert str(e)
        return
    assert 1 <= t.tokens <= limits.MAX_TOKENS and t.ids.min() >= 0 and t.ids.max() < 256


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(NAMES), values=CONFIGS, text=TEXTS)
def test_session_run_never_crashes_and_never_builds_past_the_limits(name, values, text):
    session = Session()
    session.run("before")
    before = (session.model_name, session.config, len(session.history))
    try:
        session.configure(name, values)
        session.run(text)
    except USER_ERRORS:
        if (session.model_name, session.config) == before[:2]:
            assert len(session.history) == before[2]  # nothing lost
        return
    assert param_count(session.model_name, session.config) <= limits.MAX_PARAMS
    assert ZOO[session.model_name].activation_bytes(session.config, limits.MAX_TOKENS, 1) <= \
        limits.MAX_ACTIVATION_BYTES
    assert len(session.history) == before[2] + 1


def test_spaces_and_newlines_are_tokens_and_only_nothing_is_empty():
    assert tokenize("   ").tokens == 3 and tokenize("\n").tokens == 1
    with pytest.raises(InputError, match="empty"):
        tokenize("")
