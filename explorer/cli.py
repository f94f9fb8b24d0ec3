"""Command line: `python -m explorer models`, `inspect`, `batch`, `deploy`, `debug`, `ddp` and `claim`."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from explorer.claims.board import CLAIMS, ClaimBoard
from explorer.claims.evidence import Workers
from explorer.compile.options import BACKENDS, DYNAMIC_MODES, CompileOptions
from explorer.compile.protocol import CompileFailure, JobRunner
from explorer.core.errors import USER_ERRORS, InputError
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import text_of_length
from explorer.core.machine import pin_threads
from explorer.ddp.job import ddp_service, ddp_setup
from explorer.ddp.scenarios import SCENARIOS
from explorer.ddp.world import max_world_size
from explorer.debug.modes import MODES
from explorer.deploy.checks import DEFAULT_LENGTHS, parse_lengths
from explorer.deploy.job import deploy_service
from explorer.deploy.routes import ROUTES
from explorer.eager.memory import warm_profiler
from explorer.lab.batches import DISTRIBUTIONS, batch_from_lines, generate_batch
from explorer.lab.results import LabRun
from explorer.lab.runner import compile_lab
from explorer.serving.placement import compile_service
from explorer.session import Session
from explorer.views.claims import ClaimView, claim_update
from explorer.views.ddp import ddp_update
from explorer.views.debug import debug_update
from explorer.views.deploy import deploy_update
from explorer.views.export import html_report, session_csv
from explorer.views.report import build_report
from explorer.views.tables import format_claim, format_ddp, format_debug, format_deploy, format_lab, format_table
from models import ZOO, make_config
from models.bugs import BUGS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _models(args: argparse.Namespace) -> int:
    listing = [
        {"name": e.name, "title": e.title, "summary": e.summary, "config": [k.as_dict() for k in e.knobs()]}
        for e in ZOO.values()
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
    try:
        for text in texts:
            result = session.run(text, args.compare)
            if options is not None:
                for _ in session.run_compiled(service, options):
                    pass
    except CompileFailure as e:
        raise InputError(str(e)) from None
    finally:
        service.stop()
    report = build_report(result, session.compile_track)
    _write_exports(args, session)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_table(report))
    return 0


def _write_exports(args: argparse.Namespace, session: Session) -> None:
    for path, make in ((args.html, html_report), (getattr(args, "csv", None), session_csv)):
        if path:
            try:
                Path(path).write_text(make(session), encoding="utf-8")
            except OSError as e:
                raise InputError(f"cannot write {path}: {e.strerror}") from None


def _batch(args: argparse.Namespace) -> int:
    values = _parse_sets(args.set)
    if args.lines:
        try:
            texts = batch_from_lines(Path(args.lines).read_text(encoding="utf-8"))
        except OSError as e:
            raise InputError(f"cannot read --lines {args.lines}: {e.strerror}") from None
    else:
        texts = generate_batch(args.n, args.lengths_from, args.min_len, args.max_len, args.seed)
    pin_threads()
    warm_profiler()
    session = Session()
    session.configure(args.model, values)
    *_, run = session.run_lab(texts, args.bucket_width)
    assert isinstance(run, LabRun)
    if args.compile:
        service = compile_service()
        try:
            for _ in compile_lab(service, run, args.backend):
                pass
        finally:
            service.stop()
    report = run.report()
    _write_exports(args, session)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_lab(report))
    return 0


def _items(raw: str | None, default: list[str]) -> list[str]:
    """'a, b' -> ['a', 'b']; nothing -> the default."""
    return [x.strip() for x in (raw or "").split(",") if x.strip()] or default


def _print_lab(args: argparse.Namespace, service: JobRunner, updates: Iterator[Any],
               fmt: Callable[[dict], str]) -> int:
    """Run a lab to its view in `service`'s worker (stopped afterwards) and print its report."""
    pin_threads()
    try:
        *_, view = updates
    finally:
        service.stop()
    report = view.report
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else fmt(report))
    return 0


def _deploy(args: argparse.Namespace) -> int:
    config = make_config(args.model, _parse_sets(args.set))
    out_dir = args.out or tempfile.mkdtemp(prefix="graph-explorer-deploy-")
    service = deploy_service()
    return _print_lab(args, service, deploy_update(service, args.model, config, args.text, parse_lengths(
        args.lengths), _items(args.routes, list(ROUTES)), out_dir), format_deploy)


def _debug(args: argparse.Namespace) -> int:
    config = make_config(args.model, _parse_sets(args.set))
    service = compile_service()
    return _print_lab(args, service, debug_update(service, args.model, config, args.bug, args.text,
                                                  _items(args.mode, list(MODES))), format_debug)


def _ddp(args: argparse.Namespace) -> int:
    setup = ddp_setup(args.scenario, args.model, make_config(args.model, _parse_sets(args.set)), args.world_size,
                      args.steps, args.backend)
    service = ddp_service()
    return _print_lab(args, service, ddp_update(service, args.scenario, setup), format_ddp)


def _claim(args: argparse.Namespace) -> int:
    pin_threads()
    workers = Workers(compile_service(), deploy_service(), ddp_service())
    board = ClaimBoard()
    reports = []
    try:
        for claim_id in list(CLAIMS) if args.claim == "all" else [args.claim]:
            *_, view = claim_update(board, workers, claim_id)
            assert isinstance(view, ClaimView)
            reports.append(view.report)
    finally:
        for service in (workers.compile, workers.deploy, workers.ddp):
            service.stop()
    out = reports if args.claim == "all" else reports[0]
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else "\n\n".join(map(format_claim, reports)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="explorer", description="Graph Explorer: autograd graphs, timing and memory.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("models", help="list the models and their config fields")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_models)
    p = sub.add_parser("inspect", help="run one input and print its report")
    p.add_argument("--model", required=True, choices=sorted(ZOO))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config field")
    p.add_argument("--text", required=True)
    p.add_argument("--compare", help="a second input to diff the graph against")
    p.add_argument("--json", action="store_true")
    c = p.add_argument_group("compiled execution (torch.compile, in a worker process)")
    c.add_argument("--compile", action="store_true", help="also compile, time and explain the model")
    c.add_argument("--backend", default="inductor", choices=BACKENDS)
    c.add_argument("--dynamic", default="auto", choices=sorted(DYNAMIC_MODES))
    c.add_argument("--mark-dynamic", action="store_true", help="mark the sequence dimension dynamic")
    c.add_argument("--fullgraph", action="store_true", help="fail on any graph break, and show why")
    c.add_argument("--lengths", help="run these input lengths in order, e.g. 8,16,32,64 (the compile timeline)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (figures inline)")
    p.add_argument("--csv", metavar="FILE", help="also write the measurements of every run as CSV")
    p.set_defaults(fn=_inspect)
    p = sub.add_parser("batch", help="run a batch of sentences with every batching strategy")
    p.add_argument("--model", required=True, choices=sorted(ZOO))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config field")
    p.add_argument("--lengths-from", default="zipf", choices=DISTRIBUTIONS, help="length distribution")
    p.add_argument("--n", type=int, default=64, help="number of sentences (generated)")
    p.add_argument("--min-len", type=int, default=5)
    p.add_argument("--max-len", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lines", metavar="FILE", help="read the sentences from FILE, one per line, instead")
    p.add_argument("--bucket-width", type=int, default=32, help="length range of one bucket, in tokens")
    p.add_argument("--compile", action="store_true", help="also compile each strategy (in a worker process)")
    p.add_argument("--backend", default="inductor", choices=BACKENDS)
    p.add_argument("--json", action="store_true")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (figures inline)")
    p.set_defaults(fn=_batch)
    p = sub.add_parser("deploy", help="freeze a model by every deployment route and check what survives")
    p.add_argument("--model", required=True, choices=sorted(ZOO))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config field")
    p.add_argument("--text", default=DEFAULT_TEXT, help="the input the model is frozen at")
    p.add_argument("--lengths", default=",".join(map(str, DEFAULT_LENGTHS)),
                   help="other lengths to check the artefacts at, e.g. 8,32,128")
    p.add_argument("--routes", help=f"comma-separated, of {', '.join(ROUTES)} (default: all)")
    p.add_argument("--out", metavar="DIR", help="where the artefacts go (default: a new temporary directory)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_deploy)
    p = sub.add_parser("debug", help="inject a bug and see it in eager, compiled and traced code")
    p.add_argument("--model", required=True, choices=sorted(ZOO))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config field")
    p.add_argument("--bug", required=True, choices=list(BUGS))
    p.add_argument("--text", default=DEFAULT_TEXT)
    p.add_argument("--mode", default="eager,compiled (eager),traced",
                   help=f"comma-separated, of: {', '.join(MODES)}")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_debug)
    p = sub.add_parser("ddp", help="train in several processes with DistributedDataParallel (gloo, loopback)")
    p.add_argument("--scenario", required=True, choices=list(SCENARIOS),
                   help="; ".join(f"{s.name}: {s.title} ({', '.join(s.models)})" for s in SCENARIOS.values()))
    p.add_argument("--model", required=True, choices=sorted(ZOO))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config field")
    p.add_argument("--world-size", type=int, default=2, help=f"processes, 2..{max_world_size()} (one per core)")
    p.add_argument("--steps", type=int, default=6, help="training steps per phase (2..20)")
    p.add_argument("--backend", default="aot_eager", choices=BACKENDS, help="the compiled scenario's backend")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_ddp)
    p = sub.add_parser("claim", help="test a claim about dynamic graphs on this machine, with its verdict")
    p.add_argument("--claim", required=True, choices=[*CLAIMS, "all"],
                   help="; ".join(f"{c.id}: {c.statement}" for c in CLAIMS.values()) + "; all: each in turn")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=_claim)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except USER_ERRORS as e:
        print(f"explorer {args.command}: error: {e}", file=sys.stderr)
        return 2
