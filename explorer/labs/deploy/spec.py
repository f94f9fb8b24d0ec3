"""The deployment lab: freeze a model by every route (TorchScript trace and script, torch.export, ONNX run by
ONNX Runtime, AOTInductor), then check each artefact against eager on other lengths and another text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import tokenize
from explorer.core.limits import MAX_TEXT_CHARS, MAX_TOKENS
from explorer.core.progress import Progress
from explorer.eager.capture import capture_run
from explorer.labs.contract import LabContext, LabSpec, Needs, Work
from explorer.labs.deploy.checks import DEFAULT_LENGTHS, MAX_LENGTHS, parse_lengths
from explorer.labs.deploy.job import WORKER
from explorer.labs.deploy.lab import run_deploy
from explorer.labs.deploy.results import DeployResult
from explorer.labs.deploy.routes import DECODE_ROUTES, ROUTES
from explorer.labs.deploy.view import OUTPUTS, DeployOutcome, format_deploy, view_of
from explorer.sources.contract import Subject
from models.config import knob


@dataclass(frozen=True)
class DeployParams:
    text: str = knob(DEFAULT_TEXT, "the input the model is frozen at", most=MAX_TEXT_CHARS)
    lengths: tuple[int, ...] = knob(DEFAULT_LENGTHS, f"other lengths to check the artefacts at, 1 to {MAX_TOKENS} "
                                    "tokens; the current input is always checked, and another text of its length",
                                    min=1, max=MAX_TOKENS, most=MAX_LENGTHS)
    # AOTInductor generates and compiles C++, and a decode step is only a decoder's: asked for, not defaults
    routes: tuple[str, ...] = knob(tuple(r for r in ROUTES if r != "aoti" and r not in DECODE_ROUTES),
                                   "the routes to freeze by (aoti, which compiles C++ and takes the longest, only "
                                   "when ticked: its build seconds are in the table; the decode step's exports, "
                                   "for the decoder)",
                                   choices=tuple(ROUTES))


def run(subject: Subject | None, p: DeployParams, ctx: LabContext) -> Iterator[Progress | DeployOutcome]:
    """Each route in the deployment worker, then the routes' results with the input's autograd graph."""
    assert subject is not None, "the deployment lab needs a model"
    lengths = parse_lengths(p.lengths)
    capture = capture_run(subject.build(), tokenize(p.text).ids)  # milliseconds, here: the graph the routes freeze
    for item in run_deploy(ctx.workers[WORKER.name], subject.model, subject.config, p.text, lengths, list(p.routes),
                           ctx.out_dir()):
        yield item if not isinstance(item, DeployResult) else DeployOutcome(item, capture)


def work(p: DeployParams) -> Work:
    """Each route is built once and checked on every input: the lengths, the text, another text of its length."""
    inputs = len(p.lengths) + 2
    return Work(len(p.routes) * inputs, f"{len(p.routes)} route(s) x {inputs} inputs checked", "max_deploy_checks")


SPEC = LabSpec(
    name="deploy", title="Deployment lab", summary="freeze a model by every deployment route and check what survives",
    intro="Deploying means freezing: a TorchScript trace or script, a `torch.export` program, an ONNX file run by "
          "ONNX Runtime, an AOTInductor package. Each one keeps **one run's decisions**. This lab freezes **the "
          "Playground's latest run** (its model, architecture and text) by every route, for real, then runs each "
          "artefact on other lengths and on another text of the same length against eager: which routes work, which "
          "fail loudly (with your line), and which run without an error and return **wrong answers**. Try the "
          "early-exit model, then its `exit_with=cond` variant; the RNN, then `loop=scan`.",
    button="Freeze the current model", params=DeployParams, needs=Needs.RUN, run=run, view=view_of,
    outputs=OUTPUTS, text=format_deploy, worker=WORKER, keeps_files=True, work=work)
