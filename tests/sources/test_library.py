"""Your own model through every tab: a `transformers` architecture built offline (GPT-2 at 2 layers, 128 tokens) and
each file of `examples/`: its graph is the autograd graph, the eager and compiled sides show their figures and the
compile timeline, the deployment lab reports each route it ran, the debugging lab runs the shape bug."""

import os
import socket

import pytest

from explorer.api import final, named_subject, run_lab, workers
from explorer.compile.options import CompileOptions
from explorer.core.inputs import tokenize
from explorer.labs.contract import LabContext
from explorer.labs.deploy.results import LOUD, WORKS
from explorer.labs.registry import LABS
from explorer.runs.session import Session
from explorer.sources.library import ARCHITECTURES
from explorer.sources.registry import SOURCES, add_model_file, source
from explorer.views.compiled import compiled_update
from explorer.views.playground import View, update
from tests.helpers import ROOT, autograd_nodes

pytestmark = pytest.mark.slow
LONG = ("The cat sat on the mat, and the dog, which had seen everything, said nothing at all about it. " * 2)[:128]


def test_the_library_architectures_build_and_run_with_the_network_absent(monkeypatch):
    def absent(*args, **kwargs):
        raise OSError("the network is absent in this test")

    monkeypatch.setattr(socket.socket, "connect", absent)
    monkeypatch.setattr(socket, "create_connection", absent)
    import huggingface_hub.constants

    for arch in ARCHITECTURES:
        s = source(arch.name)
        model = s.build(s.config({"layers": 1, "width": 32}))
        out = model(*s.example_inputs("Offline."))
        assert out.shape[0] == 1 and s.loss(out).ndim == 0, arch.name
    # every process of the engine runs offline (explorer/__init__.py), even one that imported the hub before it
    assert os.environ["HF_HUB_OFFLINE"] == "1" and huggingface_hub.constants.HF_HUB_OFFLINE


@pytest.mark.parametrize(("model", "text", "exported"), [
    ("gpt2", LONG, WORKS), ("examples/image_cnn.py", LONG[:40], WORKS),
    # export traces pack_padded_sequence's lengths as fake tensors: it fails, and says so
    ("examples/lstm_tagger.py", LONG[:60], LOUD)])
def test_a_model_of_yours_runs_through_every_tab(menu_restored, tmp_path, model, text, exported):
    name = model if model in SOURCES else add_model_file(str(ROOT / model))
    session = Session()
    ws = workers(session.id)
    try:
        view = final(update(session, name, text, "", {}))
        assert isinstance(view, View) and view.graph.data and view.report["eager"]["forward"]["median_ms"] > 0
        run = session.last
        s = source(name)
        again = s.build(session.config).train()  # the graph drawn is a train step's, in train mode (dropout drawn)
        assert len(run.capture.graph.nodes) == autograd_nodes(s.loss(again(tokenize(text).ids)))
        assert run.tokens == len(text)
        compiled = final(compiled_update(session, ws.compile, CompileOptions("eager")))  # dynamo: its timeline
        assert compiled.figure.data and compiled.timeline and compiled.report["compiled"]["forward"]["median_ms"] > 0
        who = named_subject(name, {}, text)
        deployed = final(run_lab(LABS["deploy"], who, {"routes": "jit.trace,export (Dim.AUTO)", "lengths": "8"},
                                 LabContext(ws, lambda: str(tmp_path))))
        routes = deployed.report["routes"]
        assert [r["route"] for r in routes] == ["jit.trace", "export (Dim.AUTO)"]
        # traced at 8 tokens, checked at the input's length and at 8: the trace answers as eager at its own length
        assert [r["outcome"] for r in routes] == [WORKS, exported], [(r["error"], r["checks"]) for r in routes]
        debugged = final(run_lab(LABS["debug"], who, {"bug": "shape", "modes": "eager"}, LabContext(ws, lambda: "")))
        eager = debugged.report["modes"][0]
        assert eager["failed"] and "models/bugs.py" in eager["failure"]["where"]
    finally:
        ws.stop()


def test_a_lab_says_before_any_click_why_it_cannot_run_the_playgrounds_model_and_which_it_runs(menu_restored):
    """The shipped tagger returns a tag per token, where the batching lab compares one row per sentence: opening
    the tab says so, with the models it runs; on a model it runs, nothing is said."""
    from explorer.ui.labs import fit_notice

    s = Session()
    s.configure(add_model_file(str(ROOT / "examples/lstm_tagger.py")), {})
    s.capture("The cat sat.")
    said = fit_notice(LABS["batch"], s)
    assert said.startswith("**This lab cannot run on the Playground's lstm_tagger**: the batching lab runs padded")
    assert "It runs on rnn, transformer" in said
    s.configure("rnn", {})
    s.capture("The cat sat.")
    assert fit_notice(LABS["batch"], s) == "" and fit_notice(LABS["deploy"], s) == ""
