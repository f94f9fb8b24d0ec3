"""One way in for the UI, the CLI and the HTTP API, with no UI library: a request's raw values parsed by the spec
that declares them (refused with a one-line message before any work), a lab's run streamed as `Progress` and
views, and each lab's endpoint made from its spec with named, typed parameters."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from explorer.claims.board import CLAIMS, ClaimBoard, checked
from explorer.claims.chosen import Chosen
from explorer.compile.options import BACKENDS, DYNAMIC_MODES, CompileOptions
from explorer.core.errors import InputError
from explorer.core.inputs import empty_message
from explorer.core.limits import MAX_TEXT_CHARS
from explorer.core.progress import Progress
from explorer.labs.contract import LabContext, LabSpec, Needs
from explorer.labs.registry import LABS
from explorer.runs.session import Session
from explorer.serving.placement import compile_service, measure_pool
from explorer.sources.contract import Subject
from explorer.sources.registry import source, subject
from explorer.views.claims import claim_update
from explorer.views.compiled import compiled_update
from explorer.views.playground import GraphFirst, update
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import COMPILE, WorkerFailure, Workers
from models.config import Knob, build_config, knob

MAX_CONFIG_CHARS = 10_000  # a config is a handful of fields: a longer JSON text is not one
MAX_CONFIG_DEPTH = 2  # {"field": value}: nothing nests deeper


def workers(session: str = "") -> Workers:
    """The worker processes a run may use: the session's compile worker and each lab's own (each started on its
    first job); a job may ask for a fresh process of its own."""
    own = {spec.worker.name: spec.worker.start() for spec in LABS.values() if spec.worker is not None}
    return Workers({COMPILE: compile_service(session), **own}, fresh=True)


_background: dict[str, WorkerProcess] = {}


def background_workers() -> Workers:
    """Idle twins of `workers()`'s (the compile worker and each lab's own), for work nobody waits for: at the lowest
    scheduling priority, so a visitor's run takes the cores at once (explorer/serving/background.py); each started
    on its first job."""
    if not _background:
        for name, runner in workers().runners.items():
            if isinstance(runner, WorkerProcess):  # (a Ray deployment's run on the cluster as they are)
                _background[name] = runner.idle_twin()
    return Workers(dict(_background), fresh=True)


def stop_background_workers() -> None:
    """Their memory back once the background work is done."""
    for w in _background.values():
        w.stop()


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def config_values(config_json: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """A JSON object of config values (or the object itself), bounded in size and depth."""
    if isinstance(config_json, Mapping):
        values = dict(config_json)
    elif config_json is None or isinstance(config_json, str):
        text = config_json or "{}"
        if len(text) > MAX_CONFIG_CHARS:
            raise InputError(f"config is {len(text):,} characters; a config is at most {MAX_CONFIG_CHARS:,}")
        try:
            values = json.loads(text, parse_int=_bounded_int)
        except json.JSONDecodeError as e:
            raise InputError(f"config must be a JSON object: {e.msg}") from None
        except RecursionError:
            raise InputError("config must be a flat JSON object, e.g. {\"layers\": 2}") from None
    else:
        raise InputError(f"config must be a JSON object, e.g. {{\"layers\": 2}}; got {type(config_json).__name__}")
    if not isinstance(values, dict):
        raise InputError("config must be a JSON object, e.g. {\"layers\": 2}")
    if _depth(values) > MAX_CONFIG_DEPTH:
        raise InputError("config must be a flat JSON object, e.g. {\"layers\": 2}")
    return values


def _bounded_int(digits: str) -> int:
    if len(digits) > 18:
        raise InputError(f"config holds a number of {len(digits)} digits; no field takes one that large")
    return int(digits)


def named_subject(model: str, config: str | Mapping[str, Any] | None, text: str = "") -> Subject:
    """The model a caller named (the CLI, the HTTP API), with its config values as JSON or a mapping, checked
    before anything is built."""
    return subject(model, config_values(config), text)


def run_lab(spec: LabSpec, who: Subject | None, values: Mapping[str, Any] | Any,
            ctx: LabContext) -> Iterator[Progress | Any]:
    """The lab's progress, then its view of each result (an eager one, say, then the compiled one). `values` are
    raw (a person's: parsed and checked here, before any work) or the spec's parameters already."""
    params = values if isinstance(values, spec.params) else spec.parse(values)
    if who is None and spec.needs is not Needs.ANY_MODEL:
        raise InputError(f"Run an input in the Playground first: the {spec.title.lower()} works on "
                         f"{spec.needs.value}.")
    if who is not None and spec.refuses is not None and (reason := spec.refuses(who)):
        raise InputError(reason)
    if who is not None and spec.needs is Needs.RUN and who.playground:
        params = dataclasses.replace(params, text=who.text)
    for item in spec.run(who, params, ctx):
        yield item if isinstance(item, Progress) else spec.view(item)


def final(items: Iterator[Progress | Any]) -> Any:
    """The last view of a run (what the CLI and the HTTP API answer with)."""
    view = None
    for item in items:
        if not isinstance(item, Progress):
            view = item
    assert view is not None, "a run ends with a view"
    return view


_API_TYPES = {"int": int, "float": float, "bool": bool}


def _api_default(k: Knob) -> Any:
    """A knob's default as the HTTP API takes it: lists comma-separated."""
    return ",".join(map(str, k.default)) if k.type in ("ints", "subset") else k.default


def endpoint_parameters(spec: LabSpec) -> list[inspect.Parameter]:
    """The endpoint's parameters, named and typed: the lab's knobs with `model` and `config_json` at `model_at`
    (a knob before them is required, as it was)."""
    def param(name: str, kind: type, default: Any = inspect.Parameter.empty) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind)

    ks = spec.knobs()
    before = [param(k.name, _API_TYPES.get(k.type, str)) for k in ks[:spec.model_at]]
    after = [param(k.name, _API_TYPES.get(k.type, str), _api_default(k)) for k in ks[spec.model_at:]]
    return [*before, param("model", str), param("config_json", str, "{}"), *after]


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of the HTTP API: `run` returns its report; `check`, with the same parameters, refuses a bad
    value with one line and does no work (the server calls it before a request waits in any queue)."""

    name: str
    run: Callable[..., dict[str, Any]]
    check: Callable[..., None]


def endpoint(spec: LabSpec, context: Callable[[], LabContext]) -> Endpoint:
    """The lab as one function of named parameters that returns its report (`spec.name` at the HTTP API): every
    value checked by the spec before any work; a refused one raises InputError (or ConfigError) with one line."""
    parameters = endpoint_parameters(spec)
    signature = inspect.Signature(parameters, return_annotation=dict)

    def parsed(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Subject]:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise InputError(f"/{spec.name}: {e}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        model, config = values.pop("model"), values.pop("config_json")
        params = spec.parse(values)
        return params, named_subject(model, config, getattr(params, "text", ""))

    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        params, who = parsed(args, kwargs)
        return final(run_lab(spec, who, params, context())).report

    def check(*args: Any, **kwargs: Any) -> None:
        parsed(args, kwargs)

    for fn in (call, check):
        fn.__name__ = fn.__qualname__ = spec.name
        fn.__signature__ = signature  # type: ignore[attr-defined]
        fn.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": dict}
    call.__doc__ = f"The {spec.title.lower()}: {spec.summary}. Returns its report, as `python -m explorer " \
                   f"{spec.name} --json`."
    return Endpoint(spec.name, call, check)


@dataclass(frozen=True)
class InspectRequest:
    """What `/inspect` takes besides the model and its config: the CLI's `inspect` options."""

    text: str = knob("", "the input", most=int(MAX_TEXT_CHARS))
    compare: str = knob("", "a second input to diff the graph against", most=int(MAX_TEXT_CHARS))
    backend: str = knob("", "also compile with this backend ('': eager only)", choices=("", *BACKENDS))
    dynamic: str = knob("auto", "torch.compile's dynamic", choices=tuple(DYNAMIC_MODES))
    mark_dynamic: bool = knob(False, "mark the sequence dimension dynamic")
    fullgraph: bool = knob(False, "fail on any graph break, and show why")


@dataclass(frozen=True)
class ClaimRequest:
    """What `/claim` takes."""

    claim: str = knob("shape", "the claim", choices=tuple(CLAIMS))
    again: bool = knob(False, "measure anew even if this server measured it lately")
    model: str = knob("", "re-run the experiment on this model instead of the zoo's, where it runs model by model "
                          f"({', '.join(c.id for c in CLAIMS.values() if c.on_model)}); '': the zoo's", most=200)


def inspect_check(model: str, config_json: str, text: str, compare: str = "", backend: str = "",
                  dynamic: str = "auto", mark_dynamic: bool = False,
                  fullgraph: bool = False) -> tuple[InspectRequest, dict[str, Any], CompileOptions | None]:
    """`/inspect`'s values parsed, or the first bad one refused with its line (no work)."""
    r = build_config(InspectRequest, {"text": text, "compare": compare, "backend": backend, "dynamic": dynamic,
                                      "mark_dynamic": mark_dynamic, "fullgraph": fullgraph}, what="parameter")
    values = config_values(config_json)
    source(model)
    if r.text == "":  # the UI's empty box is a pause; here there is no previous run to keep
        raise InputError(empty_message("text"))
    return r, values, CompileOptions(r.backend, r.dynamic, r.mark_dynamic, r.fullgraph) if r.backend else None


def inspect_run(model: str, config_json: str, text: str, compare: str = "", backend: str = "",
                dynamic: str = "auto", mark_dynamic: bool = False, fullgraph: bool = False) -> dict[str, Any]:
    """Run `text` on `model` with a JSON object of config values; returns the run's report (timed anew, never
    reused from another session). With a `backend` (inductor, aot_eager, eager) the report gains `compiled`
    and `timeline`."""
    r, values, options = inspect_check(model, config_json, text, compare, backend, dynamic, mark_dynamic, fullgraph)
    session = Session(isolate=compile_service)
    try:
        view = final(update(session, model, r.text, r.compare, values, measure_pool(), fresh=True))
        if isinstance(view, GraphFirst):  # captured, but too long to time within GE_MAX_RUN_S
            raise InputError(view.status)
        if options is None:
            return view.report
        return final(compiled_update(session, compile_service(session.id), options)).report
    except WorkerFailure as e:
        raise InputError(str(e)) from None


def claim(board: ClaimBoard, claim: str, again: bool = False, model: str = "",
          config_json: str = "{}") -> dict[str, Any]:
    """Run one claim's experiment (or return the `board`'s recent result of it); returns its report.

    claim: one of shape, padding, rebuild, debugging, speed, overhead, deploying, distributed.
    again: measure anew even if this server measured it lately.
    model, config_json: re-run it on this model and config instead of the zoo's (speed, padding, deploying)."""
    r, chosen = claim_check(claim, again, model, config_json)
    return final(claim_update(board, workers(), r.claim, r.again, chosen)).report


def claim_check(claim: str, again: bool = False, model: str = "",
                config_json: str = "{}") -> tuple[ClaimRequest, Chosen | None]:
    """`/claim`'s values parsed (the model checked against the claim), or the bad one refused with its line."""
    r = build_config(ClaimRequest, {"claim": claim, "again": again, "model": model}, what="parameter")
    values = config_values(config_json)
    if not r.model:
        if values:
            raise InputError("config_json is for the model the claim re-runs on: name the model too")
        return r, None
    return r, checked(CLAIMS[r.claim], Chosen(r.model, values))
