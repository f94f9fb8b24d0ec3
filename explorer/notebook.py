"""The engine in a notebook: `explore(model, text)` runs one input as the Playground does and shows the graph, the
cards and the diff inline (Jupyter, Colab, VS Code); `.report` is the JSON `inspect --json` prints, and
`.compiled()`, `.deploy()`, `.debug()` run the compiled side and the labs on the same model and text.

`model` is a model of the menu ("gpt2"), a file or module of yours ("my_model.py", "pkg.mod:factory") with its
knobs as keyword arguments, or an `nn.Module` object: the notebook's own code, which runs here, in the kernel
(its compiles and exports too: the worker processes rebuild a model by name, and an object has none)."""

from __future__ import annotations

import copy
import html
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import torch
from torch import nn

from explorer.api import final, run_lab, workers
from explorer.compile.options import CompileOptions
from explorer.core.errors import InputError
from explorer.draw.style import Figure
from explorer.labs.contract import LabContext, LabSpec
from explorer.labs.registry import LABS
from explorer.runs.session import Session
from explorer.serving.timings import InProcess
from explorer.sources.contract import Subject, Supports
from explorer.sources.probe import ProbedSource
from explorer.sources.registry import SOURCES, add_model_file, check_architecture
from explorer.views.compiled import compiled_update
from explorer.views.kernels import kernels_update
from explorer.views.lines import branches_report, lines_report, lines_text
from explorer.views.playground import View, costs_view, update
from explorer.workers.protocol import Here, Workers
from models.config import Knob, build_config


@dataclass(frozen=True)
class NoKnobs:
    """An object's architecture is whatever the notebook built: nothing to set."""


class ObjectSource(ProbedSource):
    """A model source for one `nn.Module` object of the notebook: every run gets a copy of it, in eval mode."""

    def __init__(self, name: str, module: nn.Module) -> None:
        super().__init__()
        self.name, self.title, self._module = name, name, module
        self.summary = f"the notebook's {type(module).__name__}"
        self.supports = Supports(batched=False, trainable=True, exportable=True)
        self.tree: tuple[str, str] | None = None
        self.own_code = False  # the notebook's object runs in the kernel: no worker could rebuild it

    def knobs(self) -> list[Knob]:
        return []

    def config(self, values: Mapping[str, Any] | None = None) -> NoKnobs:
        if values:
            raise InputError("a model given as an object has no knobs: build it with the values you want, or pass "
                             "its file (explore('my_model.py', text, width=32))")
        return build_config(NoKnobs)

    def build(self, config: Any) -> nn.Module:
        model = copy.deepcopy(self._module).eval()
        model.cfg = config
        model.graph_explorer_object = self.name  # how `builds` knows it
        return model

    def builds(self, module: nn.Module) -> bool:
        return getattr(module, "graph_explorer_object", None) == self.name

    def param_count(self, config: Any) -> int:
        return sum(p.numel() for p in self._module.parameters())


def _model_name(model: str | nn.Module) -> tuple[str, bool]:
    """The source's name, and whether worker processes can rebuild it (every source but an object)."""
    if isinstance(model, nn.Module):
        name = f"{type(model).__name__} (notebook object)"
        SOURCES[name] = ObjectSource(name, model)  # the latest object of that class: a re-run cell replaces it
        return name, False
    if not isinstance(model, str):
        raise InputError(f"model must be a name, a file, a module or an nn.Module; got {type(model).__name__}")
    return (model if model in SOURCES else add_model_file(model)), True


def _text(text_or_ids: str | torch.Tensor) -> str:
    if isinstance(text_or_ids, str):
        return text_or_ids
    if isinstance(text_or_ids, torch.Tensor) and not text_or_ids.is_floating_point() and text_or_ids.numel() and \
            int(text_or_ids.min()) >= 0 and int(text_or_ids.max()) < 256:
        try:
            return bytes(text_or_ids.flatten().tolist()).decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise InputError("the input must be text, or a tensor of byte ids (0..255) of UTF-8 text: the models take the "
                     "text's bytes")


def _cards_html(cards: list[tuple[str, str, str]]) -> str:
    rows = "".join(f"<tr><th style='text-align:left'>{html.escape(label)}</th><td>{html.escape(value)}</td>"
                   f"<td style='color:#666'>{html.escape(detail)}</td></tr>" for label, value, detail in cards)
    return f"<table>{rows}</table>"


def _cards_text(status: str, cards: list[tuple[str, str, str]]) -> str:
    return "\n".join([status, *(f"{label}: {value} ({detail})" for label, value, detail in cards)])


def _figure_html(fig: Figure | None) -> str:
    # plotly.js inline: a notebook shown offline (a classroom, a saved file) still draws it
    return "" if fig is None else fig.to_html(full_html=False, include_plotlyjs=True)


@dataclass
class LabResult:
    """A lab's last view: `.report` as the CLI's --json, shown as the CLI's text."""

    spec: LabSpec
    view: Any

    @property
    def report(self) -> dict[str, Any]:
        return self.view.report

    def __repr__(self) -> str:
        return self.spec.text(self.report)

    def _repr_html_(self) -> str:
        return f"<b>{html.escape(self.spec.title)}</b><pre>{html.escape(repr(self))}</pre>"


@dataclass
class PythonView:
    """A view of the model's Python on this input: `.report` as the CLI's --json part, shown as the CLI's text (with
    the graph it colours, where it has one)."""

    report: dict[str, Any]
    text: str
    graph: Any = None  # the view's figure (checked), or None

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<div><pre>{html.escape(self.text)}</pre>{_figure_html(self.graph) if self.graph else ''}</div>"


@dataclass
class Exploration:
    """One input run on one model (`explore`), and what can be run on it next."""

    session: Session
    view: View
    text: str
    workers: Workers

    @property
    def report(self) -> dict[str, Any]:
        """The run's report: the JSON `python -m explorer inspect --json` prints."""
        return self.view.report

    @property
    def figure(self) -> go.Figure:
        """The run's graph as a plotly Figure (a notebook draws it; `.update_layout`, `.write_html` work on it)."""
        return self.view.graph.figure

    def __repr__(self) -> str:
        return _cards_text(self.view.status, self.view.cards)

    def _repr_html_(self) -> str:
        return (f"<div><p>{html.escape(self.view.status)}</p>{_cards_html(self.view.cards)}"
                f"<pre>{html.escape(self.view.diff)}</pre>{_figure_html(self.view.graph)}</div>")

    def lines(self) -> PythonView:
        """The lines of the model's Python that ran for this text, with the nodes each made, and which way each
        `if`/`for`/`while` went (`python -m explorer inspect --lines`): recorded in a pass of its own, never timed."""
        lines, forks = self.session.lines(), self.session.branches()
        earlier = len({r.text for r in self.session.history if r.text}) - 1
        return PythonView({**lines_report(lines), "branches": branches_report(forks)},
                          lines_text(lines, forks, earlier))

    def costs(self) -> PythonView:
        """Where the train step's time and memory went, node by node, per module and per line, against the card's
        train step (`python -m explorer inspect --costs`); the graph coloured by each node's time."""
        v = costs_view(self.session)
        return PythonView(v.report, v.text, v.graph)

    def kernels(self) -> PythonView:
        """Where the compiled forward's time went, kernel by kernel, each traced to the FX nodes it computes
        (`python -m explorer inspect --kernels`); the captured graph coloured by each node's share."""
        v = final(kernels_update(self.session, self.workers))
        return PythonView(v.report, v.text, v.graph)

    def compiled(self, backend: str = "inductor", dynamic: str = "auto", mark_dynamic: bool = False,
                 fullgraph: bool = False) -> CompiledResult:
        """The same input under torch.compile: its time against eager's, the compile timeline, the graph breaks."""
        options = CompileOptions(backend, dynamic, mark_dynamic, fullgraph)
        return CompiledResult(final(compiled_update(self.session, self.workers.compile, options)))

    def lab(self, name: str, **values: Any) -> LabResult:
        """Any lab by its name (`python -m explorer --help` lists them) on this model, and this text where the lab
        takes one: `values` as its knobs, e.g. `run.lab("shapes", lengths="1 5 9")`."""
        if name not in LABS:
            raise InputError(f"unknown lab {name!r}; the labs are: {', '.join(LABS)}")
        return self._lab(name, values)

    def _lab(self, name: str, values: Mapping[str, Any]) -> LabResult:
        spec = LABS[name]
        subject = Subject(SOURCES[self.session.model_name], self.session.config, self.text)
        params = spec.parse({"text": self.text, **values} if "text" in {k.name for k in spec.knobs()} else values)
        out = tempfile.mkdtemp(prefix=f"graph-explorer-{name}-")
        return LabResult(spec, final(run_lab(spec, subject, params, LabContext(self.workers, lambda: out))))

    def deploy(self, **values: Any) -> LabResult:
        """The deployment lab on this model: each route's outcome (`routes=...`, `lengths=...` as its knobs)."""
        return self._lab("deploy", values)

    def debug(self, bug: str = "shape", **values: Any) -> LabResult:
        """The debugging lab on this model and text: `bug` injected, run eagerly, compiled and traced."""
        return self._lab("debug", {"bug": bug, **values})


@dataclass
class CompiledResult:
    view: Any

    @property
    def report(self) -> dict[str, Any]:
        return self.view.report

    def __repr__(self) -> str:
        return _cards_text(self.view.status, self.view.cards)

    def _repr_html_(self) -> str:
        return (f"<div><p>{html.escape(self.view.status)}</p>{_cards_html(self.view.cards)}"
                f"{_figure_html(self.view.figure)}</div>")


def explore(model: str | nn.Module, text: str | torch.Tensor, compare: str = "", **knobs: Any) -> Exploration:
    """Run `text` on `model` as the Playground does (graph, timings, memory, diff against `compare`), here in this
    process; `knobs` set the architecture (a model of the menu's or a file's: `explore("gpt2", t, layers=4)`)."""
    name, nameable = _model_name(model)
    session = Session(model_name=name)
    session.configure(name, knobs)
    check_architecture(name, session.config)
    text = _text(text)
    view = final(update(session, name, text, compare, dict(knobs), InProcess(), fresh=True))
    if not isinstance(view, View):  # captured, but too long to time within GE_MAX_RUN_S
        raise InputError(view.status)
    # a notebook's object is known only in this kernel
    return Exploration(session, view, text, workers(session.id) if nameable else Workers.on(Here()))



