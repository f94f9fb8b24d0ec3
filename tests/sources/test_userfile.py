"""The operator's own model file: its factory's signature is the architecture (knobs, validation, CLI keys), it
runs through the engine like a zoo model, and a file that does not load is one line naming the file and line."""

import re
import textwrap
from typing import Annotated, Literal

import pytest
from torch import nn

from explorer.api import final, named_subject, run_lab, workers
from explorer.core.errors import USER_ERRORS, InputError
from explorer.labs.contract import LabContext
from explorer.labs.registry import LABS
from explorer.runs.session import Session
from explorer.sources.registry import SOURCES, add_model_file, source
from explorer.sources.userfile import Range, config_class, load
from models.tokenizer import to_ids
from tests.helpers import ROOT, autograd_nodes, cli

TAGGER = str(ROOT / "examples" / "lstm_tagger.py")


pytestmark = pytest.mark.usefixtures("menu_restored")  # a file added here leaves the menu as it was


def test_a_factorys_signature_becomes_its_knobs_and_their_checks():
    def build(layers: Annotated[int, Range(1, 4)] = 2, width: float = 0.5, cell: Literal["gru", "lstm"] = "gru",
              bias: bool = True) -> nn.Module:
        return nn.Linear(2, 2)

    cls, whole = config_class(build, "f.py")
    assert not whole
    assert [(f.name, f.default) for f in cls.__dataclass_fields__.values()] == [
        ("layers", 2), ("width", 0.5), ("cell", "gru"), ("bias", True)]
    model = add_model_file(TAGGER)
    knobs = {k.name: k for k in source(model).knobs()}
    assert (knobs["hidden"].type, knobs["hidden"].min, knobs["hidden"].max) == ("int", 4, 512)
    assert knobs["cell"].choices == ("lstm", "gru") and knobs["bidirectional"].type == "bool"
    with pytest.raises(USER_ERRORS, match="hidden must be between 4 and 512; got 9000"):
        source(model).config({"hidden": 9000})


@pytest.mark.parametrize(("code", "said"), [
    ("def build(width):\n    return None\n", "f.py: parameter `width` needs a default"),
    ("def build(width: list = []):\n    return None\n", "`width` must be annotated int, float, bool, str"),
    ("from typing import Literal\ndef build(cell: Literal['a', 'b'] = 'c'):\n    return None\n",
     "`cell` must be a Literal of strings that holds its default"),
    ("def build(width=4)\n    return None\n", "f.py:1: syntax error"),
    ("def make(width=4):\n    return None\n", "f.py: no function `build`"),
    ("import torch\ndef build(width=4):\n    raise ValueError('no such width')\n",
     "f.py:3: the factory raised: ValueError: no such width"),
    ("def build(width=4):\n    return 'not a module'\n", "the factory returned str, not an nn.Module"),
    ("from torch import nn\nclass M(nn.Module):\n    def forward(self, ids):\n        return ids.tolist()\n"
     "def build(width=4):\n    return M()\n", "the forward must return a float tensor (logits); got list"),
])
def test_a_file_that_does_not_load_is_one_line_naming_the_file_and_line(tmp_path, monkeypatch, code, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.py").write_text(code)
    with pytest.raises(InputError) as e:
        load("f.py")
    assert said in str(e.value) and "\n" not in str(e.value)


def test_the_example_tagger_runs_through_the_engine_and_its_graph_is_the_autograd_graph():
    model = add_model_file(TAGGER)
    session = Session()
    session.configure(model, {"hidden": 16})
    run = session.run("The cat sat on the mat.", "")
    # an independent walk of the autograd graph of the same model, input and loss
    loss = source(model).loss(source(model).build(session.config)(to_ids("The cat sat on the mat.")))
    assert len(run.capture.graph.nodes) == autograd_nodes(loss) and run.forward.runs >= 3
    assert run.arch == f"{model} hidden=16" and SOURCES[model].param_count(session.config) == run.params


@pytest.mark.parametrize(("example", "knob"), [("lstm_tagger", "hidden=32"), ("image_cnn", "channels=16")])
def test_the_cli_inspects_each_example_as_the_readme_shows(example, knob):
    done = cli("inspect", "--model", f"examples/{example}.py", "--text", "The cat sat.", "--set", knob)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = dict(line.split(None, 1) for line in done.stdout.splitlines() if line.startswith(("model ", "tokens ")))
    assert rows["model"].strip() == f"{example} {knob}" and rows["tokens"].strip() == "12"  # "The cat sat." is 12


def test_the_cli_refuses_a_missing_file_with_one_line_and_exit_code_2():
    bad = cli("inspect", "--model", "examples/nope.py", "--text", "x")
    assert bad.returncode == 2 and bad.stderr.strip().endswith("examples/nope.py: no such file")


def test_a_lab_that_cannot_run_a_users_model_says_why_and_what_to_add_before_any_work(tmp_path):
    model = add_model_file(TAGGER)
    who = named_subject(model, {}, "The cat sat.")
    with pytest.raises(InputError, match=re.escape("must take `forward(ids, lengths=None)`")) as e:
        next(run_lab(LABS["batch"], who, {}, LabContext(workers(), lambda: "")))
    assert "return out[torch.arange(len(ids)), last]" in str(e.value)  # the lines to add, said with the refusal
    (tmp_path / "pixels.py").write_text(textwrap.dedent("""
        from torch import nn

        def build(width: int = 8):
            return nn.Sequential(nn.Unflatten(1, (-1, 1)), nn.Linear(1, width))  # bytes as numbers: no embedding

        def example_inputs(ids):
            return (ids.float() / 255,)
    """))
    with pytest.raises(InputError, match=re.escape("pixels has no nn.Embedding (add one")):
        next(run_lab(LABS["debug"], named_subject(add_model_file(str(tmp_path / "pixels.py")), {}, "x"), {},
                     LabContext(workers(), lambda: "")))
    (tmp_path / "classifier.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Classifier(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.embed, self.out = nn.Embedding(256, width), nn.Linear(width, 3)

            def forward(self, ids, lengths=None):
                return self.out(self.embed(ids).mean(1))  # one row per sentence: it runs padded batches

        def build(width: int = 8):
            return Classifier(width)
    """))
    assert source(add_model_file(str(tmp_path / "classifier.py"))).supports.batched


def test_a_files_example_inputs_and_loss_are_used_and_a_bad_loss_is_one_line(tmp_path, monkeypatch):
    cnn = load(str(ROOT / "examples" / "image_cnn.py"))
    model = cnn.build(cnn.config())
    seen = []
    model.model.register_forward_pre_hook(lambda m, args: seen.append(args[0].shape))
    model(to_ids("abcde"))
    assert seen == [(1, 5, 5)]  # the T x T image example_inputs made from the 5 bytes
    tagger = load(TAGGER)
    out = tagger.build(tagger.config())(to_ids("The cat."))
    assert out.shape[:2] == (1, 8) and tagger.loss(out).ndim == 0  # its own per-token loss, not the sum
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.py").write_text("from torch import nn\ndef build(width: int = 4):\n"
                                   "    return nn.Embedding(256, width)\ndef loss(out):\n    return out\n")
    with pytest.raises(InputError, match=r"f.py: loss\(output\) must return a scalar tensor .*got shape \(1, 5, 4\)"):
        load("f.py")


def test_the_docs_complete_model_file_loads_and_trains_with_its_own_loss(tmp_path):
    readme = (ROOT / "docs" / "models.md").read_text()
    code = readme.split("<!-- readme-model-file -->\n```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 30  # short enough to read at once
    (tmp_path / "readme_tagger.py").write_text(code)
    s = load(str(tmp_path / "readme_tagger.py"))
    assert [k.name for k in s.knobs()] == ["hidden", "cell"]
    out = s.build(s.config({"cell": "lstm"}))(to_ids("The cat sat."))
    assert out.shape == (1, 12, 8) and s.loss(out).ndim == 0


MASKED_MEAN = '''
import torch
from torch import nn


class MeanBytes(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.embed, self.out = nn.Embedding(256, width), nn.Linear(width, 3)

    def forward(self, ids, mask):
        return self.out((self.embed(ids) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True))


def build(width: int = 8):
    return MeanBytes(width)


def example_inputs(ids):
    return ids, torch.ones(ids.shape, dtype=torch.float)


def batch_inputs(ids, lengths):
    return ids, (torch.arange(ids.shape[1]) < lengths[:, None]).float()
'''


def test_a_files_batch_inputs_make_it_run_padded_batches_in_the_batching_lab(tmp_path):
    (tmp_path / "masked_mean.py").write_text(MASKED_MEAN)
    model = add_model_file(str(tmp_path / "masked_mean.py"))
    assert source(model).supports.batched
    lab = final(run_lab(LABS["batch"], named_subject(model, {}, ""), {"lines": "A cat.\nThe dog barked twice.\nHi"},
                        LabContext(workers(), lambda: "")))
    strategies = {s["name"]: s for s in lab.report["strategies"]}
    assert strategies["pad"]["agrees"] and strategies["loop"]["agrees"]  # the mask keeps the padding out


def test_a_factory_of_one_config_dataclass_takes_its_knobs_as_the_zoo_does(tmp_path):
    (tmp_path / "configured.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass

        from torch import nn

        from models.config import knob


        @dataclass(frozen=True)
        class BagConfig:
            width: int = knob(16, "Embedding width.", min=4, max=256)
            act: str = knob("relu", "Activation.", choices=("relu", "tanh"))


        def build(cfg: BagConfig) -> nn.Module:
            return nn.Sequential(nn.Embedding(256, cfg.width), nn.ReLU() if cfg.act == "relu" else nn.Tanh())
    """))
    s = load(str(tmp_path / "configured.py"))
    assert [(k.name, k.help, k.max) for k in s.knobs()] == [("width", "Embedding width.", 256),
                                                            ("act", "Activation.", None)]
    config = s.config({"width": "32", "act": "tanh"})
    assert type(config).__name__ == "BagConfig" and s.param_count(config) == 256 * 32
    assert isinstance(s.build(config)[1], nn.Tanh)
    with pytest.raises(USER_ERRORS, match="width must be between 4 and 256"):
        s.config({"width": 1000})
