"""The Perfetto trace: valid Chrome-trace JSON, gzip'd, with the model's aten ops and its Python lines, each region
named; at the token limit it stays under the artefact limit, past which it is refused with a message."""

import gzip
import json

import pytest

from explorer.artefacts import perfetto
from explorer.artefacts.perfetto import REGIONS, PerfettoJob, checked_size
from explorer.core.errors import InputError
from explorer.core.limits import MAX_ARTEFACT_BYTES, MAX_TOKENS
from explorer.workers.protocol import WorkerContext
from models.tokenizer import encode


def events(trace: bytes) -> list[dict]:
    return json.loads(gzip.decompress(trace))["traceEvents"]


def test_the_trace_at_the_token_limit_names_the_ops_and_the_models_lines_under_the_artefact_limit():
    trace = PerfettoJob("rnn", {}, tuple(encode("x" * MAX_TOKENS)), None).run(WorkerContext(lambda phase: None))
    assert len(trace) < MAX_ARTEFACT_BYTES
    names = {e.get("name", "") for e in events(trace)}
    assert "aten::linear" in names and len({n for n in names if n.startswith("aten::")}) >= 10  # the ops, named
    assert any(n.startswith("models/rnn.py(") for n in names)  # the model's own lines, in the stacks
    assert set(REGIONS[:2]) <= names and REGIONS[2] not in names  # not compiled: no compiled region


def test_a_trace_past_the_limit_is_refused_with_a_message(monkeypatch):
    monkeypatch.setattr(perfetto, "MAX_ARTEFACT_BYTES", 10)
    with pytest.raises(InputError, match=r"past this server's limit .* profile a shorter input"):
        checked_size(b"x" * 11)
