"""The shapes lab: what each dimension of the input became in the graphs torch.compile cached, their guards with the
lines that made them, and, for a stream of requests, which will recompile: predicted from the guards before any
request runs, then run and compared."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.compile.options import BACKENDS, DYNAMIC_MODES, CompileOptions
from explorer.core.errors import InputError
from explorer.core.limits import MAX_BATCH, MAX_TOKENS, RECOMPILE_LIMIT
from explorer.core.progress import Progress
from explorer.core.workload import StreamParams
from explorer.labs.contract import LabContext, LabSpec, Needs
from explorer.labs.shapes.checked import SHAPE, Check
from explorer.labs.shapes.job import OUTPUT_SHAPES, SCALAR_OUTPUTS, ShapesJob
from explorer.labs.shapes.lab import run_shapes
from explorer.labs.shapes.predict import STANCES
from explorer.labs.shapes.results import ShapesResult
from explorer.labs.shapes.view import OUTPUTS, against, format_shapes, view_of
from explorer.sources.contract import Subject
from models.config import config_dict, knob


@dataclass(frozen=True)
class ShapesParams(StreamParams):
    min_len: int = knob(1, "the shortest request (a distribution's), tokens (1: dynamo's 0/1 specialization shows)",
                        min=1, max=MAX_TOKENS)
    compiled_at: tuple[int, ...] = knob((8, 16), "the lengths compiled first, in order: the graphs the prediction "
                                        "reads (two lengths let automatic dynamic act)", min=1, max=MAX_TOKENS,
                                        most=int(RECOMPILE_LIMIT))
    backend: str = knob("eager", "torch.compile's backend (the guards are dynamo's, the same for every backend; "
                        "inductor also generates C++)", choices=BACKENDS)
    dynamic: str = knob("auto", "torch.compile's dynamic: auto (automatic dynamic), true, false",
                        choices=tuple(DYNAMIC_MODES))
    mark_dynamic: bool = knob(False, "torch._dynamo.mark_dynamic on the length before each call")
    mark_min: int = knob(0, "mark_dynamic's lower bound on the length (0: none); a request outside the range fails",
                         min=0, max=MAX_TOKENS)
    mark_max: int = knob(0, "mark_dynamic's upper bound on the length (0: none)", min=0, max=MAX_TOKENS)
    scalar_outputs: bool = knob(False, f"torch._dynamo.config.{SCALAR_OUTPUTS}: .item() in the graph (an unbacked "
                                "symbol) instead of a break")
    output_shapes: bool = knob(False, f"torch._dynamo.config.{OUTPUT_SHAPES}: nonzero and its kin in the graph "
                               "(an unbacked size) instead of a break")
    mark_unbacked: bool = knob(False, "torch._dynamo.decorators.mark_unbacked on the length before each call: a "
                               "size traced without a value, so no guard specializes it (1 included); a line that "
                               "needs its value fails, named")
    stance: str = knob("default", "torch.compiler.set_stance while the requests run (after the first compiles): "
                       "eager_on_recompile runs eagerly what would compile, fail_on_recompile makes it fail; "
                       "eager_then_compile, set from the first call, runs it eagerly and compiles the second",
                       choices=tuple(STANCES))
    export: bool = knob(False, "also torch.export the model with its length a Dim from 2 to the token limit: the "
                        "range export proves, or its refusal with the line that specialized the length")
    batch: int = knob(1, "rows in every input (the sentence repeated): a batch equal to a length compiled makes two "
                      "sizes meet, and duck sizing gives them one symbol (with dynamic true)", min=1, max=MAX_BATCH)
    duck_shape: bool = knob(True, "torch.fx.experimental._config.use_duck_shape: sizes equal when traced share one "
                            "symbol (duck sizing); off, each size has its own")
    check: str = knob("", f"a torch._check inserted into the forward, a comparison of sizes ({SHAPE} on each "
                      "side): `t <= 64`, `ids.size(1) >= 2`; empty: none", most=200)
    check_line: int = knob(0, "the line of the forward's file the check goes before (a statement's first line); 0: "
                           "the forward's first statement", min=0, max=100_000)


def run(subject: Subject | None, p: ShapesParams, ctx: LabContext) -> Iterator[Progress | ShapesResult]:
    assert subject is not None, "the shapes lab needs a model"
    requests = p.workload().lengths
    switches = tuple(s for s, on in ((SCALAR_OUTPUTS, p.scalar_outputs), (OUTPUT_SHAPES, p.output_shapes)) if on)
    if p.check_line and not p.check.strip():
        raise InputError(f"check_line {p.check_line} says where a check goes: give the check too (`t <= 64`)")
    check = Check(p.check.strip(), p.check_line) if p.check.strip() else None
    options = CompileOptions(p.backend, p.dynamic, p.mark_dynamic, mark_min=p.mark_min or None,
                             mark_max=p.mark_max or None)
    job = ShapesJob(subject.model, config_dict(subject.config), options, p.compiled_at, requests, switches,
                    p.mark_unbacked, p.stance, p.export, p.batch, p.duck_shape, check)
    yield from run_shapes(ctx.workers, job)


SPEC = LabSpec(
    name="shapes", title="Shapes lab", summary="which dimensions compiled dynamic, and which requests will recompile",
    intro="A compiled model keeps a graph per shape its guards accept. This lab compiles **the Playground's model**"
          " at a few lengths, shows what each dimension of the input became in each cached graph (a symbol, dynamic"
          " or specialized at the line that made it a constant, or static), the sizes only the data decides (an "
          "unbacked symbol, at its line) and the guards on shapes with the line dynamo recorded for each, then "
          "takes a stream of requests and says, **before any runs**, which reuse a graph, which compile one and "
          "which run eagerly past the recompile limit, from the guards themselves. Then it runs them and shows what"
          " dynamo did beside each prediction. Each run starts a fresh worker process: dynamo's caches are the "
          "process's.",
    button="Predict, then run", params=ShapesParams, needs=Needs.MODEL, run=run, view=view_of, outputs=OUTPUTS,
    text=format_shapes, against=against)
