"""The lab contract: what a lab declares once, and everything else is made from it.

A lab is a package under `explorer/labs/` with one `spec.py` that builds a `LabSpec`, and one line in
`registry.py`. From the spec come the lab's tab (`explorer/ui/labs.py`), its CLI verb and its HTTP endpoint
(`explorer/api.py`): its parameters are a dataclass of `knob()` fields (type, default, range and help, declared
once), its model comes through the model contract (`explorer/sources`), and its run streams `Progress` and then
typed results, which its view turns into the figures, tables and text its outputs declare."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from explorer.core import limits
from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.core.queues import Queue
from explorer.sources.contract import Subject
from explorer.workers.protocol import COMPILE, JobRunner, Workers
from models.config import Knob, build_config, knobs

P = TypeVar("P")  # the lab's parameters: a dataclass of knob() fields
R = TypeVar("R")  # what a run measured


class Needs(Enum):
    """What a lab needs of a model. In the UI each is taken from the Playground; on the CLI and the HTTP API the
    caller names the model and its config (and gives the text as the lab's `text` parameter)."""

    MODEL = "the Playground's current model and architecture"
    RUN = "the Playground's latest run: its model, architecture and text"
    ANY_MODEL = "the Playground's latest model if the lab takes it, else one of the lab's own"


class Kind(Enum):
    """How an output is shown (the UI picks the component from it)."""

    MARKDOWN = "markdown"
    TABLE = "table"
    PLOT = "plot"
    CODE = "code"
    FILES = "files"


@dataclass(frozen=True)
class Output:
    """One thing a lab's view shows: `name` is the view's field it reads."""

    name: str
    kind: Kind
    label: str = ""
    columns: tuple[str, ...] = ()  # a table's headers
    prose: tuple[str, ...] = ()  # a table's columns of sentences (a note, an exception): wrapped in a fixed width

    def __post_init__(self) -> None:
        if unknown := set(self.prose) - set(self.columns):
            raise ValueError(f"output {self.name}: prose columns {sorted(unknown)} are not among its columns")
    row: int = 0  # outputs with the same non-zero row stand side by side
    folded: bool = False  # in a closed accordion (long text: tracebacks)


@dataclass(frozen=True)
class Work:
    """What one request of a lab would do, estimated from its parameters before any of it runs."""

    amount: int
    counted: str  # how, in the person's terms: "7 routes x 5 inputs"
    limit: str  # the key of its limit in explorer/core/limits.py


@dataclass(frozen=True)
class OwnWorker:
    """A worker process only this lab's runs use (the deployment lab's exports, the distributed runs), one per
    server, started on first use: under `name` in `Workers`, and its runs wait in a queue of that name, one at a
    time; closing the page that started a run cancels it."""

    name: str
    start: Callable[[], JobRunner]


@dataclass(frozen=True)
class LabContext:
    """What a run may use besides its model: the worker processes, and a fresh directory for files it keeps."""

    workers: Workers
    out_dir: Callable[[], str]


@dataclass(frozen=True)
class LabSpec(Generic[P, R]):
    name: str  # the tab's id, the CLI verb and the endpoint's name
    title: str  # the tab's title
    summary: str  # one line: the CLI's help
    intro: str  # markdown: what the lab shows, at the top of its tab
    button: str  # the button that runs it
    params: type[P]
    needs: Needs
    run: Callable[[Subject | None, P, LabContext], Iterator[Progress | R]]  # progress, then one result or more
    view: Callable[[R], Any]  # a dataclass with `status`, `report` and one field per output
    outputs: tuple[Output, ...]
    text: Callable[[dict[str, Any]], str]  # the report as the CLI prints it without --json
    queue: Queue = Queue.COMPILE  # the server's queue its runs wait in (with a worker of its own: that worker's)
    worker: OwnWorker | None = None  # a worker process of its own; None: the session's compile worker
    model_at: int = 0  # where `model` and `config_json` stand among the endpoint's parameters
    keeps_files: bool = False  # writes artefacts: the CLI takes --out DIR, the UI offers them for download
    work: Callable[[P], Work] | None = None  # its estimate, refused past its limit (the knobs bound the rest)
    refuses: Callable[[Subject], str | None] | None = None  # why it cannot run on a model (a user's), if it cannot
    # what changed against the same person's previous run (both reports), said under the status; "" for nothing
    against: Callable[[dict[str, Any], dict[str, Any]], str] | None = None

    def runner(self, workers: Workers) -> JobRunner:
        """The worker its runs hold (stopped after a CLI run, cancelled when its page closes)."""
        return workers[self.worker.name if self.worker else COMPILE]

    @property
    def waits_in(self) -> str:
        """The name of the server's queue its runs wait in."""
        return self.worker.name if self.worker else self.queue.value

    def knobs(self) -> list[Knob]:
        return knobs(self.params)

    def parse(self, values: Mapping[str, Any] | None = None) -> P:
        """The parameters from a person's values (the defaults where none is given); refused with a one-line
        ConfigError by name, type and range."""
        params = build_config(self.params, values, what="parameter")
        if self.work is not None:
            w = self.work(params)
            limit = limits.named(w.limit)
            if w.amount > limit.value:
                raise InputError(f"this run would be {w.counted} = {w.amount:,}; this server takes at most "
                                 f"{limit.value:,.0f} per request ({limit.env}). Ask for less.")
        return params

    def shown(self) -> list[Knob]:
        """The knobs the UI makes controls for: `text` comes from the Playground's run where the lab needs one."""
        return [k for k in self.knobs() if not (self.needs is Needs.RUN and k.name == "text")]


def on_first_use(package: str, modules: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A lab package's module `__getattr__` (PEP 562): each name in `modules` (its module in the package -> the
    names) imported when first read. A lab's spec and view draw its figures (plotly, igraph); its experiment, which
    the claims run (in a lesson's notebook too, where torch alone is installed), must not import them."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    return __getattr__
