"""A forward that raises: the Playground shows the graph it built up to the failure, the last node made before it
ringed and the line it raised at, from the server or from the worker that captures an operator's file; the
history keeps the runs that worked."""

import pytest
import torch

from explorer.eager.partial import ForwardRaised, record_partial
from explorer.runs.session import Session
from explorer.sources.registry import add_model_file
from explorer.views.playground import GraphFirst, View, update
from explorer.workers.process import WorkerProcess

SHY = '''import torch
from torch import nn


class Loud(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, ids):
        y = self.proj(x).relu()
        if (ids == ord("!")).any():
            raise ValueError("no shouting")
        return y


class Shy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(256, 8)
        self.loud = Loud()

    def forward(self, ids):
        x = self.embed(ids).tanh()
        return self.loud(x, ids).mean(1)


def build():
    return Shy()
'''
RAISES_AT = 13  # the line of `raise ValueError` above


@pytest.fixture
def shy(tmp_path, menu_restored):
    path = tmp_path / "shy.py"
    path.write_text(SHY)
    return add_model_file(str(path))


def test_the_graph_up_to_the_failure_keeps_its_modules_and_names_the_line(shy):
    session = Session()
    session.configure(shy, {})
    partial = record_partial(session.model, torch.tensor([list(b"Hi!")]))
    assert partial.error == "ValueError: no shouting" and partial.line.endswith(f"shy.py:{RAISES_AT}")
    assert partial.code == 'raise ValueError("no shouting")' and partial.tokens == 3
    ops = {n.op: n.module for n in partial.graph.nodes if not n.is_param}
    # the call that raised was still open: its nodes are still its own (loud), not the loss's
    assert ops == {"EmbeddingBackward0": "embed", "TanhBackward0": "model", "AddmmBackward0": "loud.proj",
                   "ViewBackward0": "loud.proj", "TBackward0": "loud.proj", "ReluBackward0": "loud"}
    assert partial.graph.node(partial.last).op == "ReluBackward0"  # made last, just before the raise
    assert record_partial(session.model, torch.tensor([list(b"Hi")])) is None  # this input does not raise


@pytest.mark.parametrize("worker", [False, True], ids=["in the server", "in the capture worker"])
def test_the_playground_shows_the_partial_graph_and_keeps_the_history(shy, worker):
    capturer = WorkerProcess(name="capture") if worker else None
    try:
        session = Session(isolate=(lambda _: capturer) if worker else None)
        good = list(update(session, shy, "Hi", "", {}))
        assert isinstance(good[-1], View)
        raised = list(update(session, shy, "Hi!", "", {}))
        assert len(raised) == 1 and isinstance(raised[0], GraphFirst)
        shown = raised[0]
        assert shown.status.startswith(f"**The forward raised at <tmp>/shy.py:{RAISES_AT}")
        ops = shown.report["graph"]["op_nodes"]  # embedding, tanh, the linear's four, relu
        assert ops == 7 and "ValueError: no shouting" in shown.status and "7 operation nodes" in shown.status
        assert shown.report["line"] == f"<tmp>/shy.py:{RAISES_AT}"
        ring = [t.name for t in shown.graph.data if (t.name or "").startswith("the last node")]
        assert ring == ["the last node made before it raised: 1 node"]
        assert [r.tokens for r in session.history] == [2]  # the run that worked, only
        assert worker == (not session.holds_model)  # an operator's file runs in the worker only
        with pytest.raises(ForwardRaised, match="no shouting"):  # the CLI and API: a clear refusal, with the line
            session.capture("Hi!!")
    finally:
        if capturer is not None:
            capturer.stop()
