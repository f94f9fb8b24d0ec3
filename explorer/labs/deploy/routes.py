"""The routes from a dynamic model to a static artefact, each a real call: trace, script, export, ONNX, AOTInductor.

Each route builds its artefact from the model at the current input, then runs it on every check input against
eager (max |diff|), and times it against eager back to back at the current input. A route never raises: what
failed is in its result, with the user's line where torch names one. They run in the deployment worker
(`job.py`), where a hang or a crash cannot take the app down."""

from __future__ import annotations

import linecache
import re
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from explorer.compile.observe import fx_nodes, message_line, user_line
from explorer.compile.options import cxx_compiler
from explorer.core.limits import FORWARD_BUDGET_S, MAX_TOKENS
from explorer.core.paths import EDITOR, PROJECT, relative, sanitize
from explorer.eager.compare import compare
from explorer.eager.generation import generate
from explorer.labs.deploy.checks import CheckInput
from explorer.labs.deploy.results import Check, RouteResult, Warned
from models.decoder import DynamicStep, StaticStep

Runner = Callable[[torch.Tensor], torch.Tensor]
T = TypeVar("T")


@dataclass
class Setting:
    """What every route gets: the model, its inputs (the current one first), and where to write files."""

    model: nn.Module
    inputs: list[CheckInput]
    workdir: Path
    phase: Callable[[str], None]

    @property
    def example(self) -> torch.Tensor:
        return self.inputs[0].ids()


def _where(filename: str, lineno: int) -> str:
    if filename == EDITOR:  # the Code tab's edit of the model's file: its line as the editor numbers it
        return f"the edited file, line {lineno}: {linecache.getline(filename, lineno).strip()}"
    if not filename.startswith(PROJECT) or "/site-packages/" in filename or "/explorer/" in filename:
        return ""
    return f"{relative(filename)}:{lineno}: {linecache.getline(filename, lineno).strip()}"


def _error_where(e: BaseException) -> str:
    """The user's line an error names: dynamo's "from user code" part, else the deepest model frame."""
    named = user_line(e)
    if named:
        return named.removeprefix(" (at ").removesuffix(")")
    frames = [f for f in traceback.extract_tb(e.__traceback__) if _where(f.filename, f.lineno or 0)]
    return _where(frames[-1].filename, frames[-1].lineno or 0) if frames else ""


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {message_line(e)[:300]}"


def _reason(e: BaseException) -> str:
    """The line of a long export error that says why (dynamo's explanation), if it has one."""
    return next((ln.strip()[:300] for ln in str(e).splitlines()
                 if any(k in ln for k in ("because", "Could not guard", "inferred to be"))), "")


def _warned(caught: list[warnings.WarningMessage]) -> list[Warned]:
    seen: dict[tuple[str, str], Warned] = {}
    for w in caught:
        msg = next((ln.strip() for ln in str(w.message).splitlines() if ln.strip()), "")[:300]
        key = (w.category.__name__, msg)
        seen.setdefault(key, Warned(w.category.__name__, msg, _where(w.filename, w.lineno)))
    return list(seen.values())


def _deprecation(r: RouteResult) -> None:
    if any(w.category == "DeprecationWarning" for w in r.warnings):
        r.notes.append("TorchScript is deprecated in this torch (a DeprecationWarning, which Python's default "
                       "filters hide)")


def check_against_eager(run: Runner, eager: nn.Module, inputs: list[CheckInput]) -> list[Check]:
    """Max |artefact - eager| on each input, or the error the artefact raised."""
    checks = []
    for inp in inputs:
        ids = inp.ids()
        with torch.no_grad():
            want = eager(ids)
            try:
                got = torch.as_tensor(run(ids))
            except Exception as e:  # the artefact refused this input: a loud failure, which is what we report
                checks.append(Check(inp.label, len(inp.tokens), None, _one_line(e)))
                continue
        diff = float((got.reshape(want.shape) - want).abs().max()) if got.numel() == want.numel() else float("inf")
        checks.append(Check(inp.label, len(inp.tokens), diff))
    return checks


def _finish(r: RouteResult, s: Setting, run: Runner, artefact: Path | None, snippet: str) -> RouteResult:
    """Check the artefact on every input; time it against eager where it is right at the current input."""
    s.phase(f"{r.route}: checking the artefact on {len(s.inputs)} inputs against eager")
    r.checks = check_against_eager(run, s.model, s.inputs)
    if artefact is not None and artefact.exists():
        r.artefact, r.artefact_bytes, r.load_snippet = str(artefact), artefact.stat().st_size, snippet
    if r.checks and r.checks[0].correct:
        s.phase(f"{r.route}: timing the artefact and eager at the current input, in interleaved pairs")
        ids = s.example
        with torch.no_grad():
            r.comparison = compare("eager", lambda: s.model(ids), r.route, lambda: run(ids), 2 * FORWARD_BUDGET_S)
        r.eager, r.latency = r.comparison.measurement("eager"), r.comparison.measurement(r.route)
    return r


def _build(r: RouteResult, build: Callable[[], T], user_warnings_only: bool = False) -> T | None:
    """Run a route's build step timed, with every warning recorded into `r` (only those naming the user's code,
    if asked); on an exception `r` says what failed and where, and None is returned."""
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = build()
        except Exception as e:  # the route failing is an outcome: its message, the user's line, the reason
            out = None
            r.error, r.where = _one_line(e), _error_where(e)
            if (why := _reason(e)) and why not in r.error:
                r.notes.append(why)
    r.seconds = time.perf_counter() - started
    r.warnings = [w for w in _warned(caught) if w.where or not user_warnings_only]
    return out


def _clean_torchscript() -> None:
    """TorchScript keeps every class it compiled for the process: an earlier job's half-compiled classes would
    turn this model's real error into "Can't redefine method"."""
    torch._C._jit_clear_class_registry()
    torch.jit._recursive.concrete_type_store = torch.jit._recursive.ConcreteTypeStore()
    torch.jit._state._clear_class_state()


def _seq_dim(auto: bool) -> tuple[dict[int, object]]:
    dim = torch.export.Dim.AUTO if auto else torch.export.Dim("seq", min=2, max=MAX_TOKENS)
    return ({1: dim},)


def jit_trace(s: Setting) -> RouteResult:
    r = RouteResult("jit.trace")
    traced = _build(r, lambda: torch.jit.trace(s.model, (s.example,), check_trace=False))
    _deprecation(r)
    if traced is None:
        return r
    if not any(w.category == "TracerWarning" for w in r.warnings):
        r.notes.append("no TracerWarning: nothing told you which decisions the trace froze")
    path = s.workdir / "traced.pt"
    torch.jit.save(traced, str(path))
    return _finish(r, s, traced, path, 'm = torch.jit.load("traced.pt"); m(torch.tensor([list(b"your text")]))')


def jit_script(s: Setting) -> RouteResult:
    r = RouteResult("jit.script")
    _clean_torchscript()
    scripted = _build(r, lambda: torch.jit.script(s.model))
    _deprecation(r)
    if scripted is None:
        return r
    path = s.workdir / "scripted.pt"
    torch.jit.save(scripted, str(path))
    return _finish(r, s, scripted, path, 'm = torch.jit.load("scripted.pt"); m(torch.tensor([list(b"your text")]))')


def _export(s: Setting, auto: bool) -> tuple[torch.export.ExportedProgram | None, RouteResult]:
    r = RouteResult("export (Dim.AUTO)" if auto else "export")
    ep = _build(r, lambda: torch.export.export(s.model, (s.example,), dynamic_shapes=_seq_dim(auto)), True)
    if ep is None:
        return None, r
    ranges = {str(k): str(v) for k, v in ep.range_constraints.items()}
    r.notes.append(f"range constraints: {ranges}" if ranges else
                   "range constraints: none: the program was exported for this one length (static)")
    gm = ep.graph_module
    r.graph_ops = dict(Counter(str(n.target) for n in gm.graph.nodes if n.op == "call_function").most_common())
    r.graph_code, r.fx = sanitize(gm.print_readable(print_output=False)), fx_nodes(gm)  # no path of the server
    return ep, r


def export(s: Setting, auto: bool = False) -> RouteResult:
    ep, r = _export(s, auto)
    if ep is None:
        return r
    path = s.workdir / ("exported-auto.pt2" if auto else "exported.pt2")
    torch.export.save(ep, str(path))
    return _finish(r, s, ep.module(), path,
                   f'm = torch.export.load("{path.name}").module(); m(torch.tensor([list(b"your text")]))')


def export_auto(s: Setting) -> RouteResult:
    return export(s, auto=True)


def draft_export(s: Setting) -> RouteResult:
    """`torch.export.draft_export`: always returns a program, and a report of what export would have refused.
    Where the model decides on data, the program holds the decision of the example input."""
    r = RouteResult("export (draft)")
    # It warns with its whole report (no user line): only warnings naming the user's code are kept.
    ep = _build(r, lambda: torch.export.draft_export(s.model, (s.example,), dynamic_shapes=_seq_dim(False)), True)
    if ep is None:
        return r
    report = getattr(ep, "_report", None)
    failures = list(getattr(report, "failures", []) or [])
    for f in failures:
        data = getattr(f, "data", None)
        kind = getattr(getattr(f, "failure_type", None), "name", "issue")
        what = (f"{data.get('expr')}" + (f" (was {data['result']} for the example)" if "result" in data else "")
                if isinstance(data, dict) and "expr" in data else re.sub(r"\s+", " ", str(data or f))[:240])
        r.notes.append(f"draft report, {kind}: {what}")
    if not failures:
        r.notes.append("draft report: no issues (export would have succeeded)")
    if report is not None:  # the whole report as torch prints it, with its stacks: to take away
        text = s.workdir / "draft-export-report.txt"
        text.write_text(str(report), encoding="utf-8")
        r.report = str(text)
    path = s.workdir / "draft-exported.pt2"
    torch.export.save(ep, str(path))
    return _finish(r, s, ep.module(), path,
                   'm = torch.export.load("draft-exported.pt2").module(); m(torch.tensor([list(b"your text")]))')


def onnx(s: Setting) -> RouteResult:
    import onnxruntime as ort

    r = RouteResult("onnx")
    path = s.workdir / "model.onnx"

    def export_and_save() -> Path:
        program = torch.onnx.export(s.model, (s.example,), dynamo=True, dynamic_shapes=_seq_dim(False),
                                    input_names=["ids"], output_names=["logits"], verbose=False)
        program.save(str(path))
        return path

    if _build(r, export_and_save, True) is None:
        return r
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1  # as eager is timed: one thread
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    shape = session.get_inputs()[0].shape
    r.notes.append(f"ONNX input shape: {shape}" + ("" if any(isinstance(d, str) for d in shape) else
                                                   ": fixed, this file accepts one length only"))

    def run(ids: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(session.run(None, {"ids": ids.numpy()})[0])

    return _finish(r, s, run, path, 'onnxruntime.InferenceSession("model.onnx").run(None, {"ids": ids.numpy()})')


def aoti(s: Setting) -> RouteResult:
    if cxx_compiler() is None:
        return RouteResult("aoti", skipped="AOTInductor needs a C++ compiler (g++/c++) and none was found")
    ep, exported = _export(s, auto=False)
    if ep is None:
        return RouteResult("aoti", skipped=f"needs a torch.export program, and export failed: {exported.error}")
    r = RouteResult("aoti")
    path = s.workdir / "model-aoti.pt2"
    s.phase("aoti: inductor generates and compiles C++ for the exported program (tens of seconds)")

    def package_and_load() -> Runner:
        torch._inductor.aoti_compile_and_package(ep, package_path=str(path))
        return torch._inductor.aoti_load_package(str(path))

    runner = _build(r, package_and_load, True)
    if runner is None:
        return r
    beyond = MAX_TOKENS + 88
    try:  # the declared maximum is not enforced by the package: show it
        runner(torch.zeros(1, beyond, dtype=torch.long))
        r.notes.append(f"a {beyond}-token input (past the exported maximum of {MAX_TOKENS}) ran without a bound "
                       "check")
    except Exception as e:
        r.notes.append(f"a {beyond}-token input (past the exported maximum) was refused: {_one_line(e)}")
    return _finish(r, s, runner, path, 'm = torch._inductor.aoti_load_package("model-aoti.pt2"); m(ids)')


DECODE_STEPS = 16  # decode steps of an exported decode step checked against eager generation


def _decode_step(s: Setting, kind: str) -> RouteResult:
    """torch.export of a decoder's decode step, its cache of `kind` as inputs, at the cache the current input
    leaves; checked over DECODE_STEPS steps against eager generation from that input, fed back its own cache."""
    route = f"export ({kind}-cache decode)"
    model = s.model
    if not callable(getattr(model, "new_cache", None)):
        return RouteResult(route, skipped="the model does not generate: a decode step is a decoder's (the zoo's "
                                          "decoder)")
    ids, pads = s.example, torch.zeros(1, dtype=torch.long)
    layers = model.cfg.layers
    with torch.no_grad():
        want = generate(model, ids, pads, DECODE_STEPS + 1, kind).logits[0, 1:]
        cache = model.new_cache(pads, kind)
        token = model.step(ids, cache)[:, -1].argmax(-1, keepdim=True)
        cache.advance(ids.shape[1])
    kv = [t.clone() for t in [*(cache.k[i] for i in range(layers)), *(cache.v[i] for i in range(layers))]]
    if kind == "static":
        step, state = StaticStep(model), (cache.seen.clone(), pads)
        shapes = None
    else:
        step, state = DynamicStep(model), (pads,)
        columns = torch.export.Dim("cache", min=1, max=model.cfg.max_positions - 1)
        shapes = (None, None, tuple({2: columns} for _ in kv))  # the keys and values: one dynamic length
    r = RouteResult(route)
    s.phase(f"{route}: exporting the decode step at {ids.shape[1]} cached positions")
    ep = _build(r, lambda: torch.export.export(step, (token, *state, *kv), dynamic_shapes=shapes), True)
    if ep is None:
        return r
    ranges = {str(k): str(v) for k, v in ep.range_constraints.items()}
    r.notes.append(f"range constraints: {ranges}" if ranges else "range constraints: none: every shape is fixed")
    gm = ep.graph_module
    r.graph_ops = dict(Counter(str(n.target) for n in gm.graph.nodes if n.op == "call_function").most_common())
    r.graph_code, r.fx = sanitize(gm.print_readable(print_output=False)), fx_nodes(gm)
    path = s.workdir / f"decode-{kind}.pt2"
    torch.export.save(ep, str(path))
    run = ep.module()
    s.phase(f"{route}: {DECODE_STEPS} decode steps of the program against eager generation")
    got, first = [], (token, *state, *kv)
    try:
        with torch.no_grad():
            args = tuple(t.clone() for t in first)
            for _ in range(DECODE_STEPS):
                out = run(*args)
                logits = out if kind == "static" else out[0]
                got.append(logits[0])
                nxt = logits.argmax(-1, keepdim=True)
                args = (nxt, args[1] + 1, *args[2:]) if kind == "static" else (nxt, pads, *out[1:])
        r.checks = [Check(f"{DECODE_STEPS} decode steps after the current input", DECODE_STEPS,
                          float((torch.stack(got) - want).abs().max()))]
    except Exception as e:  # the program refused a later step (a shape past what it was exported for)
        r.checks = [Check(f"decode step {len(got) + 1} after the current input", len(got) + 1, None, _one_line(e))]
    r.artefact, r.artefact_bytes = str(path), path.stat().st_size
    r.load_snippet = (f'step = torch.export.load("{path.name}").module(); ' + (
        "logits = step(token, seen, pads, *k_buffers, *v_buffers)  # buffers written at column seen"
        if kind == "static" else "logits, *kv = step(token, pads, *k, *v)  # each layer's keys, then values"))
    if r.checks[0].correct:
        s.phase(f"{route}: timing the program and eager at this position, in interleaved pairs")
        with torch.no_grad():
            r.comparison = compare("eager", lambda: step(*first), route, lambda: run(*first), 2 * FORWARD_BUDGET_S)
        r.eager, r.latency = r.comparison.measurement("eager"), r.comparison.measurement(route)
    return r


def export_static_decode(s: Setting) -> RouteResult:
    return _decode_step(s, "static")


def export_dynamic_decode(s: Setting) -> RouteResult:
    return _decode_step(s, "dynamic")


ROUTES: dict[str, Callable[[Setting], RouteResult]] = {
    "jit.trace": jit_trace, "jit.script": jit_script, "export": export, "export (Dim.AUTO)": export_auto,
    "export (draft)": draft_export, "onnx": onnx, "aoti": aoti,
    "export (static-cache decode)": export_static_decode, "export (dynamic-cache decode)": export_dynamic_decode,
}
DECODE_ROUTES = ("export (static-cache decode)", "export (dynamic-cache decode)")  # a decoder's, asked for

