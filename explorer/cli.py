"""Command line: `python -m explorer models`, `inspect` and `claim`, and one verb per lab (explorer/labs/registry.py),
made from the lab's spec; the synopsis in docs/cli.md is generated from this parser (explorer/docgen.py)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from explorer.api import final, named_subject, run_lab, workers
from explorer.artefacts.lesson import lesson_notebook, step_of
from explorer.artefacts.notebook import reproduction_notebook
from explorer.artefacts.perfetto import checked_size, latest_run_job
from explorer.artefacts.script import reproduction_script
from explorer.artefacts.tlparse import replay_job, traced
from explorer.claims.board import CLAIMS, ClaimBoard, checked, claims_file
from explorer.claims.chosen import Chosen
from explorer.compile.options import BACKENDS, DYNAMIC_MODES, CompileOptions
from explorer.core.errors import USER_ERRORS, InputError
from explorer.core.inputs import text_of_length
from explorer.core.machine import pin_threads
from explorer.eager.memory import warm_profiler
from explorer.labs.contract import LabContext, LabSpec
from explorer.labs.registry import LABS
from explorer.runs.session import Session
from explorer.serving.placement import compile_service
from explorer.sources.registry import SOURCES, add_model_file
from explorer.views.claims import ClaimView, claim_update
from explorer.views.costs import CardTimes, costs_report, costs_text
from explorer.views.export import html_report, session_csv
from explorer.views.kernels import KernelsView, kernels_update
from explorer.views.lines import branches_report, lines_report, lines_text
from explorer.views.report import build_report
from explorer.views.tables import format_claim, format_table
from explorer.workers.protocol import COMPILE, WorkerFailure, Workers
from models import Knob


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _models(args: argparse.Namespace) -> int:
    listing = [
        {"name": e.name, "title": e.title, "summary": e.summary, "config": [k.as_dict() for k in e.knobs()]}
        for e in SOURCES.values()
    ]
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    for m in listing:
        print(f"{m['name']}: {m['title']}. {m['summary']}")
        for k in m["config"]:
            rng = f"one of {', '.join(k['choices'])}" if "choices" in k else (
                f"{k['min']:g}..{k['max']:g}" if "min" in k else "true/false")
            print(f"  --set {k['name']}=  ({k['type']}, default {k['default']}, {rng})  {k['help']}")
    return 0


def _parse_sets(pairs: list[str]) -> dict[str, str]:
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--set takes KEY=VALUE; got {pair!r}")
        values[key.strip()] = value
    return values


def _lengths(raw: str | None) -> list[int]:
    if not raw:
        return []
    try:
        return [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--lengths takes whole numbers separated by commas, e.g. 8,16,32; got {raw!r}") from None


def _inspect(args: argparse.Namespace) -> int:
    values = _parse_sets(args.set)
    lengths = _lengths(args.lengths)
    options = CompileOptions(args.backend, args.dynamic, args.mark_dynamic, args.fullgraph) if args.compile else None
    if lengths and options is None:
        raise InputError("--lengths goes with --compile")
    pin_threads()
    warm_profiler()
    session = Session()
    session.configure(args.model, values)
    texts = [text_of_length(args.text, n) for n in lengths] or [args.text]
    service = compile_service()
    kernels: KernelsView | None = None
    try:
        for text in texts:
            result = session.run(text, args.compare)
            if options is not None:
                for _ in session.run_compiled(service, options):
                    pass
        if args.kernels:
            kernels = final(kernels_update(session, Workers({COMPILE: service}, fresh=True)))
        if args.chrome_trace:
            *_, trace = service.run(latest_run_job(session))
            _written(args.chrome_trace, checked_size(trace))
        if args.trace_dir:
            if options is None:
                raise InputError("--trace-dir traces the compiles: it goes with --compile")
            compiled = final(traced(replay_job(session), Path(args.trace_dir)))
            print(f"tlparse's report: {compiled.index}", file=sys.stderr)
            for compile_id in compiled.compile_ids:
                page = compiled.pages.get(compile_id, "not in the report")
                print(f"  compile {compile_id}: {compiled.index.parent / page}", file=sys.stderr)
    except WorkerFailure as e:
        raise InputError(str(e)) from None
    finally:
        service.stop()
    report = build_report(result, session.compile_track)
    lines = session.lines() if args.lines or args.costs else None
    forks = session.branches() if args.lines else []
    if lines is not None and args.lines:
        report["lines"] = {**lines_report(lines), "branches": branches_report(forks)}
    costs = session.costs() if args.costs else None
    if costs is not None and lines is not None:
        report["costs"] = costs_report(costs, result.capture.graph, lines)
    if kernels is not None:
        report["kernels"] = kernels.report
    _write_exports(args, session)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_table(report))
    if costs is not None and lines is not None and not args.json:
        print("\n" + costs_text(costs, result.capture.graph, lines,
                                CardTimes(result.forward.median_ms, result.train_step.median_ms)))
    if lines is not None and args.lines and not args.json:
        print("\n" + lines_text(lines, forks, len(texts) - 1))
    if kernels is not None and not args.json:
        print("\n" + kernels.text)
    return 0


def _write_exports(args: argparse.Namespace, session: Session) -> None:
    for path, make in ((args.html, html_report), (args.csv, session_csv), (args.script, reproduction_script),
                       (args.notebook, reproduction_notebook)):
        if path:
            _written(path, make(session).encode("utf-8"))


def _written(path: str, data: bytes) -> None:
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror}") from None


def lab_values(args: argparse.Namespace, spec: LabSpec) -> dict[str, Any]:
    """The lab's parameters the command line gave (the spec's defaults stand for the rest)."""
    values: dict[str, Any] = {}
    for k in spec.knobs():
        raw = getattr(args, k.name)
        if raw is not None and k.file:
            try:
                raw = Path(raw).read_text(encoding="utf-8")
            except OSError as e:
                raise InputError(f"cannot read {option_of(k)} {raw}: {e.strerror}") from None
        if raw is None and k.switch and getattr(args, f"{k.name}_switch"):
            raw = next(c for c in k.choices if c)
        if raw is not None:
            values[k.name] = raw
    return values


def _lab(args: argparse.Namespace, spec: LabSpec) -> int:
    """Run a lab to its last view in this process (its workers stopped afterwards) and print its report."""
    params = spec.parse(lab_values(args, spec))
    who = named_subject(args.model, _parse_sets(args.set), getattr(params, "text", ""))
    pin_threads()
    warm_profiler()
    ws = workers()
    out = getattr(args, "out", None) or (tempfile.mkdtemp(prefix="graph-explorer-deploy-") if spec.keeps_files
                                         else "")
    try:
        view = final(run_lab(spec, who, params, LabContext(ws, lambda: out)))
    except WorkerFailure as e:
        raise InputError(str(e)) from None
    finally:
        ws.stop()
    print(json.dumps(view.report, indent=2, ensure_ascii=False) if args.json else spec.text(view.report))
    return 0


def _model(name: str) -> str:
    """A model of the menu, or the operator's own file or module (loaded and checked here)."""
    if name in SOURCES:
        return name
    if not (name.endswith(".py") or "/" in name or ":" in name or "." in name):
        raise argparse.ArgumentTypeError(f"unknown model {name!r}; models are: {', '.join(SOURCES)}, or a "
                                         "file.py[:factory] or pkg.module[:factory] of yours")
    try:
        return add_model_file(name)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def option_of(k: Knob) -> str:
    """The command-line option of a lab's parameter."""
    return k.flag or "--" + k.name.replace("_", "-")


def _add_lab(sub: Any, spec: LabSpec) -> None:
    """A lab's verb, made from its spec: --model and --set, then one option per parameter."""
    p = sub.add_parser(spec.name, help=spec.summary)
    p.add_argument("--model", required=True, type=_model, metavar="MODEL",
                   help=f"{', '.join(SOURCES)}, or your own: path/to/file.py[:factory] or pkg.module[:factory]")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config field")
    for k in spec.knobs():
        default = ",".join(map(str, k.default)) if isinstance(k.default, tuple) else k.default
        said = f"{k.help} (default: {default})"
        if k.file:
            p.add_argument(option_of(k), dest=k.name, metavar="FILE", help=f"{k.help}: read from FILE")
        elif k.type == "choice":
            p.add_argument(option_of(k), dest=k.name, choices=k.choices, help=said)
        elif k.type == "subset":
            p.add_argument(option_of(k), dest=k.name, help=f"{said}; comma-separated, of: {', '.join(k.choices)}")
        else:
            p.add_argument(option_of(k), dest=k.name, help=said)
        if k.switch:
            p.add_argument(k.switch, dest=f"{k.name}_switch", action="store_true",
                           help=f"the same as {option_of(k)} {next(c for c in k.choices if c)}")
    if spec.keeps_files:
        p.add_argument("--out", metavar="DIR", help="where the artefacts go (default: a new temporary directory)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=lambda args: _lab(args, spec))


def _claim(args: argparse.Namespace) -> int:
    if args.notebook:  # the step's notebook, written, not run: its experiment runs on the class's machines
        number = step_of(args.claim)
        kept = ClaimBoard(path=claims_file())  # this machine's server's results, if it keeps them
        kept.restore()
        _written(args.notebook, lesson_notebook(number, kept.cached(args.claim)).encode("utf-8"))
        return 0
    pin_threads()
    ws = workers()
    board = ClaimBoard()
    reports = []
    chosen = None
    if args.model:
        if args.claim == "all":
            raise InputError("--model re-runs one claim on your model: name the claim")
        chosen = checked(CLAIMS[args.claim], Chosen(args.model, _parse_sets(args.set)))
    try:
        for claim_id in list(CLAIMS) if args.claim == "all" else [args.claim]:
            *_, view = claim_update(board, ws, claim_id, model=chosen)
            assert isinstance(view, ClaimView)
            reports.append(view.report)
    finally:
        ws.stop()
    out = reports if args.claim == "all" else reports[0]
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else "\n\n".join(map(format_claim, reports)))
    return 0


def parser() -> argparse.ArgumentParser:
    """Every verb and its options (each lab's made from its spec)."""
    parser = _Parser(prog="explorer", description="Graph Explorer: autograd graphs, timing and memory.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("models", help="list the models and their config fields")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_models)
    p = sub.add_parser("inspect", help="run one input and print its report")
    p.add_argument("--model", required=True, type=_model, metavar="MODEL",
                   help=f"{', '.join(SOURCES)}, or your own: path/to/file.py[:factory] or pkg.module[:factory]")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config field")
    p.add_argument("--text", required=True)
    p.add_argument("--compare", help="a second input to diff the graph against")
    p.add_argument("--json", action="store_true")
    p.add_argument("--costs", action="store_true", help="also profile the (last) input's train step node by node: "
                   "the costliest nodes, and the time per module and per line (a pass of its own, after the timings)")
    p.add_argument("--lines", action="store_true", help="also record which lines of the model's Python ran for the "
                   "(last) input, how often, and how many graph nodes each made (a pass of its own, never timed)")
    p.add_argument("--kernels", action="store_true", help="also compile the (last) input's forward afresh with "
                   "inductor's provenance on and profile its kernels, each traced to the FX nodes it computes (a "
                   "worker of its own)")
    c = p.add_argument_group("compiled execution (torch.compile, in a worker process)")
    c.add_argument("--compile", action="store_true", help="also compile, time and explain the model")
    c.add_argument("--backend", default="inductor", choices=BACKENDS)
    c.add_argument("--dynamic", default="auto", choices=sorted(DYNAMIC_MODES))
    c.add_argument("--mark-dynamic", action="store_true", help="mark the sequence dimension dynamic")
    c.add_argument("--fullgraph", action="store_true", help="fail on any graph break, and show why")
    c.add_argument("--lengths", help="run these input lengths in order, e.g. 8,16,32,64 (the compile timeline)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (figures inline)")
    p.add_argument("--csv", metavar="FILE", help="also write the measurements of every run as CSV")
    p.add_argument("--script", metavar="FILE", help="also write a Python script that reproduces the run's figures "
                   "(the zoo model's source inside: it needs only torch)")
    p.add_argument("--notebook", metavar="FILE", help="also write that script as a Jupyter notebook")
    p.add_argument("--trace-dir", metavar="DIR", help="also replay the compiles with TORCH_TRACE in a fresh worker "
                   "and write the log (DIR/logs) and tlparse's HTML report (DIR/report/index.html)")
    p.add_argument("--chrome-trace", metavar="FILE", help="also profile the last input (eager forward and train "
                   "step; the compiled forward with --compile) and write the gzip'd Chrome trace, for Perfetto")
    p.set_defaults(fn=_inspect)
    for spec in LABS.values():
        _add_lab(sub, spec)
    p = sub.add_parser("claim", help="test a claim about dynamic graphs on this machine, with its verdict")
    p.add_argument("--claim", required=True, choices=[*CLAIMS, "all"],
                   help="; ".join(f"{c.id}: {c.statement}" for c in CLAIMS.values()) + "; all: each in turn")
    p.add_argument("--model", type=_model, metavar="MODEL",
                   help="re-run the claim's experiment on this model instead of the zoo's (where it runs model by "
                        f"model: {', '.join(c.id for c in CLAIMS.values() if c.on_model)})")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="the model's config field")
    p.add_argument("--json", action="store_true")
    p.add_argument("--notebook", metavar="FILE", help="write the claim's lesson step as a Jupyter notebook instead "
                   "of running it: its claim, what to do and notice, the room's prediction, its experiment as code "
                   "with the engine it runs on (it needs torch alone, no clone) and this machine's server's result "
                   "of it, if the server keeps one (GE_CLAIMS_FILE), to set beside the one it measures")
    p.set_defaults(fn=_claim)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except USER_ERRORS as e:
        print(f"explorer {args.command}: error: {e}", file=sys.stderr)
        return 2
