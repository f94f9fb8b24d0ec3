"""The Playground's state as code: a Python script, self-contained, that rebuilds the current zoo model or library
architecture with its config and seed (the model's source is in it: it needs only torch, and transformers for a
library architecture), runs the current text, and prints the same
figures the app shows (the autograd graph's node and edge counts, the eager forward and train step, and the compiled
forward where the session compiled), with the app's own figures in its docstring to hold them against.

The script is a list of sections; the notebook (`explorer/artefacts/notebook.py`) makes each one a cell."""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.artefacts.embed import closure
from explorer.compile.options import DYNAMIC_MODES
from explorer.core import machine
from explorer.core.errors import InputError
from explorer.core.limits import THREADS
from explorer.eager.timing import Measurement
from explorer.runs.session import Session
from explorer.sources import library
from models import ZOO
from models.config import config_dict

LIBRARY = {a.name: a for a in library.ARCHITECTURES}
ENGINE = Path(__file__).resolve().parents[1]  # explorer/: its files are the app's, not a model's
MIN_RUN_TIME_S = 0.5  # per timing: longer than the app's budget, so that the script's median is the steadier one


@dataclass(frozen=True)
class Section:
    title: str  # the notebook's markdown above the cell
    code: str


def model_modules(module: str) -> dict[str, str]:
    """The source of `module` (`models.rnn`) and of every `models` module it imports, transitively, by name (the
    `models` package's own __init__ left out: the script's importer serves the package)."""
    return closure([module], packages=("models",), parents=False)


_IMPORTER = '''
class _Embedded(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the `models` package from the sources above (its frames are named models/<file>.py)."""

    def find_spec(self, name, path=None, target=None):
        if name == "models" or name in MODEL_SOURCES:
            return importlib.util.spec_from_loader(name, self, is_package=name == "models")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__name__ in MODEL_SOURCES:
            path = "models/" + module.__name__.split(".", 1)[1] + ".py"
            source = MODEL_SOURCES[module.__name__]
            module.__file__ = path  # the classes' file, as inspect finds it
            linecache.cache[path] = (len(source), None, source.splitlines(True), path)  # their lines, read back
            exec(compile(source, path, "exec"), module.__dict__)


sys.meta_path.insert(0, _Embedded())
'''

_GRAPH = '''
def nodes_of(loss):
    """The autograd graph's nodes under the loss, every one once (parameters' AccumulateGrad included), in one fixed
    order (a walk from the loss): the same graph walked twice gives the same order."""
    order, seen, stack = [], {loss.grad_fn}, [loss.grad_fn]
    while stack:
        fn = stack.pop()
        order.append(fn)
        for nxt, _ in reversed(fn.next_functions):
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return order


def graph_counts(loss):
    """The autograd graph under the loss, as the app reads it: its nodes and every edge."""
    order = nodes_of(loss)
    return len(order), sum(nxt is not None for fn in order for nxt, _ in fn.next_functions)


def train_loss(output):
    """The app's loss: a classifier's logits against class 0 (the weights are random anyway), else the sum."""
    if output.dim() != 2:
        return output.float().sum()
    return F.cross_entropy(output, torch.zeros(output.shape[0], dtype=torch.long))


model.train()  # the app reads a train step's graph in train mode (dropout drawn, seeded), then goes back to eval
with torch.random.fork_rng(devices=[]):
    torch.manual_seed(0)
    loss = train_loss(model(ids))
model.eval()
nodes, edges = graph_counts(loss)
del loss
figures = {"nodes": nodes, "edges": edges}
print(f"autograd graph: {nodes} nodes, {edges} edges (the app: {APP['nodes']} nodes, {APP['edges']} edges)")
'''

_LINES = '''
def model_files(model):
    """The files that define the model's modules' classes, torch's own left out (the app's rule), and this script's
    (a library architecture's wrapper, copied here from the app: its lines are not the model's)."""
    torch_dir = os.path.dirname(torch.__file__)
    return {f for m in model.modules() if type(m).__module__ != "__main__"
            and not (f := inspect.getfile(type(m))).startswith(torch_dir)}


def shown(file, line):
    """A line as the script and APP name it: its file's name (an installed library's path differs by machine)."""
    return f"{os.path.basename(file)}:{line}"


files = model_files(model)
hits = collections.Counter()


def count_lines(frame, event, arg):
    """Python's line events in the model's files, as the `trace` module counts them."""
    if frame.f_code.co_filename not in files:
        return None
    if event == "line":
        hits[(frame.f_code.co_filename, frame.f_lineno)] += 1
    return count_lines


model.train()  # the training forward the graph above was read from, seeded the same
with torch.random.fork_rng(devices=[]):
    torch.manual_seed(0)
    sys.settrace(count_lines)
    try:
        model(ids)
    finally:
        sys.settrace(None)
model.eval()
figures["lines"] = {shown(f, n): k for (f, n), k in sorted(hits.items())}
differ = sorted(k for k in set(figures["lines"]) | set(APP.get("lines", {}))
                if figures["lines"].get(k) != APP.get("lines", {}).get(k))
print(f"lines of the model that ran: {len(hits)}, {sum(hits.values())} line events in all; "
      + (f"against the app's: {len(differ)} differ ({', '.join(differ[:5])})" if differ else
         "every count equal to the app's" if "lines" in APP else "(the app did not record its lines)"))
for (f, n), k in sorted(hits.items()):
    print(f"  {shown(f, n):<28} ran {k:>4}  {linecache.getline(f, n).strip()}")
print("which way each branch went:")
for f in sorted(files):
    for node in ast.walk(ast.parse("".join(linecache.getlines(f)))):
        if isinstance(node, (ast.If, ast.For, ast.While)) and hits[(f, node.lineno)]:
            body = hits[(f, node.body[0].lineno)]
            said = (f"taken {body} of {hits[(f, node.lineno)]} times" if isinstance(node, ast.If) else
                    f"body ran {body} times")
            print(f"  {shown(f, node.lineno):<28} {linecache.getline(f, node.lineno).strip()}  {said}")
'''

_COSTS = '''
def made_at(fn):
    """The line that made a node: the innermost frame in the model's files of the stack anomaly mode kept."""
    for path, line in reversed(re.findall(r'File "([^"]+)", line (\\d+)', "".join(fn.metadata.get("traceback_", [])))):
        if path in files:
            return shown(path, int(line))
    return None


model.train()
with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
    warnings.simplefilter("ignore")  # anomaly mode says it is slow: this pass is not timed
    with torch.autograd.detect_anomaly(check_nan=False):
        torch.manual_seed(0)
        line_at = [made_at(fn) for fn in nodes_of(train_loss(model(ids)))]
per_line = collections.Counter()
for _ in range(5):  # each step profiled: an operator's own time to the node of its nearest enclosing operator
    model.zero_grad(set_to_none=True)  # that carries one of this step's nodes' sequence numbers
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        loss = train_loss(model(ids))
        index = {fn._sequence_nr(): i for i, fn in enumerate(nodes_of(loss))}
        loss.backward()
    for e in prof.events():
        owner = e
        while owner is not None and owner.sequence_nr not in index:
            owner = owner.cpu_parent
        if owner is not None and line_at[index[owner.sequence_nr]] is not None:
            per_line[line_at[index[owner.sequence_nr]]] += e.self_cpu_time_total
model.eval()
total = sum(per_line.values()) or 1.0
figures["costs"] = {k: v / total for k, v in per_line.most_common(10)}
print("where the train step's time went, per line of the model (the profiler over 5 steps; each operator's own time "
      "at the line that made its node, forward and backward):")
for where, share in figures["costs"].items():
    app = APP.get("costs", {}).get(where)
    print(f"  {where:<28} {100 * share:5.1f}%" + (f"  (the app: {100 * app:.1f}%)" if app is not None else ""))
'''

_TIMING = '''
def timed(label, fn):
    """Median and IQR in ms, with torch.utils.benchmark (blocks of calls, MIN_RUN_TIME_S seconds or more)."""
    m = benchmark.Timer("fn()", globals={"fn": fn}, num_threads=THREADS, label=label).blocked_autorange(
        min_run_time=MIN_RUN_TIME_S)
    return {"median_ms": m.median * 1e3, "iqr_ms": m.iqr * 1e3, "runs": len(m.times)}


def train_step():
    model.zero_grad(set_to_none=True)
    train_loss(model(ids)).backward()


with torch.no_grad():
    figures["forward"] = timed("forward", lambda: model(ids))
model.train()
figures["train_step"] = timed("train step", train_step)
model.eval()
for what in ("forward", "train_step"):
    f, app = figures[what], APP[what]
    print(f"{what}: {f['median_ms']:.3f} ms (IQR {f['iqr_ms']:.3f}, {f['runs']} runs); the app: "
          f"{app['median_ms']:.3f} ms (IQR {app['iqr_ms']:.3f}, {app['runs']} runs)")
'''

_COMPILED = '''
torch._dynamo.reset()
compiled = torch.compile(model, backend=COMPILE["backend"], dynamic=COMPILE["dynamic"],
                         fullgraph=COMPILE["fullgraph"])
if COMPILE["mark_dynamic"]:
    torch._dynamo.mark_dynamic(ids, 1)
with torch.no_grad():
    start = time.perf_counter()
    compiled(ids)  # the first call compiles
    compile_s = time.perf_counter() - start
    figures["compiled"] = timed("compiled forward", lambda: compiled(ids)) | {"first_call_s": compile_s}
f, app = figures["compiled"], APP["compiled"]
print(f"compiled forward ({COMPILE['backend']}): {f['median_ms']:.3f} ms (IQR {f['iqr_ms']:.3f}), first call "
      f"{compile_s:.2f} s; the app: {app['median_ms']:.3f} ms (IQR {app['iqr_ms']:.3f})")
'''


def _measured(m: Measurement) -> dict[str, float | int]:
    return {"median_ms": m.median_ms, "iqr_ms": m.iqr_ms, "runs": m.runs}


def _python_views(session: Session) -> dict[str, Any]:
    """The app's lines that ran (each line's count) and, where it profiled the train step, each line's share of its
    time: what the script's two passes print theirs beside, a line named by its file's name (a library's path
    differs by machine). Empty where the input on screen is not the latest run's."""
    shown, last = session.shown, session.last
    if shown is None or last is None or shown.input.text != last.input.text:
        return {}
    lines = session.lines()
    own = {s.file for s in lines.lines if Path(s.file).resolve().is_relative_to(ENGINE)}  # the library's wrapper
    views: dict[str, Any] = {"lines": {f"{Path(s.file).name}:{s.line}": s.hits for s in lines.lines
                                       if s.hits and s.file not in own}}
    costs = session.costs_shown()
    if costs is not None:
        line = {nid: f"{Path(f).name}:{n}" for nid, (f, n) in lines.node_line.items() if f not in own}
        total = sum(c.total_us for c in costs.nodes.values()) or 1.0
        shares: dict[str, float] = {}
        for nid, c in costs.nodes.items():
            if nid in line:
                shares[line[nid]] = shares.get(line[nid], 0.0) + c.total_us / total
        views["costs"] = shares
    return views


def reproducible(session: Session) -> bool:
    """Whether the session's latest run is one a script can rebuild: a zoo model's or a library architecture's (a
    user's own file is not reproduced yet)."""
    return session.last is not None and (session.last.model in ZOO or session.last.model in LIBRARY)


def _zoo_build(model: str, values: dict[str, Any]) -> tuple[str, str, str]:
    """The zoo model's modules (the root of the sources to embed), the extra lines it needs, and its build."""
    entry = ZOO[model]
    cls, config_cls = entry.model_cls, entry.config_cls
    return cls.__module__, "", (f"from {cls.__module__} import {cls.__name__}, {config_cls.__name__}\n\n"
                                f"config = {config_cls.__name__}(**{values!r})\n"
                                "with torch.random.fork_rng(devices=[]):\n    torch.manual_seed(config.seed)\n"
                                f"    model = {cls.__name__}(config).eval()\n")


def _library_build(model: str, values: dict[str, Any]) -> tuple[str, str, str]:
    """A `transformers` architecture as the app builds it: its config class, the maker and the wrapper that answers
    one row per sentence, copied from explorer/sources/library.py (transformers needed, nothing downloaded)."""
    arch = LIBRARY[model]
    code = "\n\n".join(inspect.getsource(x) for x in (library.LibraryConfig, arch.make, library.LibraryModel))
    extra = ('import os\nfrom dataclasses import dataclass\nfrom typing import Any\n\nfrom torch import nn\n\n'
             'from models.config import ConfigError, knob\n\n'
             'os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from its config: nothing is downloaded\n'
             f"VOCAB, POSITIONS, MAX_TOKENS = {library.VOCAB}, {library.POSITIONS}, {library.MAX_TOKENS}\n\n\n"
             f"{code}")
    return "models.config", extra, (f"config = LibraryConfig(**{values!r})\n"
                                    "with torch.random.fork_rng(devices=[]):\n    torch.manual_seed(config.seed)\n"
                                    f"    model = LibraryModel({arch.make.__name__}(config), {arch.seq2seq}, "
                                    f"{arch.cache}).eval()\n")


def sections(session: Session) -> list[Section]:
    """The script's sections for the session's latest run (an InputError if it is not `reproducible`)."""
    run = session.last
    if run is None:
        raise InputError("run an input first: the script reproduces the Playground's latest run")
    if not reproducible(session):
        raise InputError(f"the script reproduces the zoo's models and the library architectures "
                         f"({', '.join([*ZOO, *LIBRARY])}); {run.model!r} is not one yet")
    values = config_dict(run.config)
    root, extra, build_code = (_zoo_build if run.model in ZOO else _library_build)(run.model, values)
    app = {"nodes": len(run.capture.graph.nodes), "edges": len(run.capture.graph.edges),
           "forward": _measured(run.forward), "train_step": _measured(run.train_step)}
    compiled = run.compiled if run.compiled is not None and run.compiled.compiled is not None else None
    if compiled is not None:
        app["compiled"] = _measured(compiled.compiled)
    app |= _python_views(session)
    where = machine.this_machine().line()
    needs = "torch" if run.model in ZOO else "torch and transformers"
    header = Section(
        "What this reproduces",
        f'"""Graph Explorer, reproduced: {run.arch}, on {len(run.input.text)} characters ({run.tokens} tokens).\n\n'
        f"The app measured this on {where}, {time.strftime('%Y-%m-%d')}; the figures are in APP. Run it where "
        f"{needs} is installed:\nthe model's source is in it. Each figure it prints stands beside the app's; "
        'timings hold on the same machine, within their spread.\n"""\n\n'
        "import ast\nimport collections\nimport importlib.abc\nimport importlib.util\nimport inspect\nimport json\n"
        "import linecache\nimport os\nimport re\nimport sys\nimport time\nimport warnings\n\nimport torch\n"
        "import torch.nn.functional as F\nimport torch.utils.benchmark as benchmark\n\n"
        f"THREADS = {THREADS}  # the app's torch threads for every figure\n"
        f"MIN_RUN_TIME_S = {MIN_RUN_TIME_S}  # seconds per timing\n"
        f"TEXT = {run.input.text!r}\n"
        f"APP = {json.dumps(app, indent=1)}\n")
    modules = model_modules(root)
    models = Section(f"The model's source: `models/` as the app ran it ({', '.join(modules)})",
                     f"MODEL_SOURCES = {modules!r}\n" + _IMPORTER + (f"\n\n{extra}" if extra else ""))
    build = Section(
        "The model at its config, with its seed's weights, and the text as byte ids",
        build_code + "torch.set_num_threads(THREADS)\n"
        "ids = torch.tensor([list(TEXT.encode('utf-8'))], dtype=torch.long)  # one token per UTF-8 byte\n")
    parts = [header, models, build, Section("The autograd graph of one training forward", _GRAPH.strip() + "\n"),
             Section("The lines of the model that ran, and which way each branch went (a pass of its own, never timed)",
                     _LINES.strip() + "\n"),
             Section("Eager timings: the forward (no grad) and a train step", _TIMING.strip() + "\n"),
             Section("Where the train step's time went, per line of the model (the profiler, after the timings)",
                     _COSTS.strip() + "\n")]
    if compiled is not None:
        o = compiled.options
        options = {"backend": o.backend, "dynamic": DYNAMIC_MODES[o.dynamic],
                   "mark_dynamic": o.mark_dynamic, "fullgraph": o.fullgraph}
        parts.append(Section(f"The compiled forward: torch.compile, {o.label()}",
                             f"COMPILE = {options!r}\n" + _COMPILED.strip() + "\n"))
    parts.append(Section("Every figure, as JSON", "print(json.dumps(figures))\n"))
    return parts


def reproduction_script(session: Session) -> str:
    return "\n\n".join(s.code if i == 0 else f"# {s.title}\n{s.code}" for i, s in
                       enumerate(sections(session))).rstrip() + "\n"

