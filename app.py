"""Graph Explorer's web UI: layout and wiring only; everything it shows comes from `explorer`.

Every event's outputs are declared once, by name (`Outputs`); a handler returns only the outputs it changes
(`OUT.fill(name=value)`), and the rest are left as they are. Each tab and panel has its own builder."""

from __future__ import annotations

import html
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from explorer.claims.board import CLAIMS, ClaimBoard
from explorer.claims.evidence import Claim
from explorer.claims.lessons import STEPS, step, step_markdown
from explorer.compile.options import BACKENDS, CompileOptions
from explorer.compile.protocol import CompileFailure, Workers
from explorer.compile.warmup import warm_compile_cache
from explorer.core import limits
from explorer.core.batches import DISTRIBUTIONS
from explorer.core.budget import warm_param_count
from explorer.core.errors import USER_ERRORS, InputError
from explorer.core.examples import DEFAULT_TEXT, EXAMPLES
from explorer.core.inputs import empty_message
from explorer.core.machine import (
    describe,
    freeze_startup_objects,
    keep_off_measure_cores,
    limit_malloc_arenas,
    pin_threads,
)
from explorer.core.progress import Progress
from explorer.eager.memory import warm_profiler
from explorer.labs.batching.view import LAB_COLUMNS, LabView, lab_compiled_update, lab_texts, lab_update
from explorer.labs.ddp.job import ddp_service, ddp_setup, model_for
from explorer.labs.ddp.registry import SCENARIOS
from explorer.labs.ddp.view import COST_COLUMNS, ddp_update
from explorer.labs.ddp.world import max_world_size
from explorer.labs.debug.modes import MODES
from explorer.labs.debug.view import MODE_COLUMNS, NAN_COLUMNS, debug_update
from explorer.labs.deploy.checks import DEFAULT_LENGTHS, parse_lengths
from explorer.labs.deploy.job import deploy_service
from explorer.labs.deploy.routes import ROUTES
from explorer.labs.deploy.view import DEPLOY_COLUMNS, deploy_update
from explorer.runs.session import DEFAULT_MODEL, RunResult, Session
from explorer.serving.addresses import LongAddressGuard
from explorer.serving.placement import compile_service, measure_pool
from explorer.serving.residency import Residency
from explorer.serving.statelink import LinkState, read_link
from explorer.views.claims import ClaimView, cached_view, claim_update
from explorer.views.compiled import TIMELINE_COLUMNS, compiled_update
from explorer.views.export import ExportDir
from explorer.views.figures import graph_figure
from explorer.views.playground import GraphFirst, View, control_specs, opened_graph, update, values_for
from models import ZOO, Knob, make_config
from models.bugs import BUGS
from models.config import config_dict

log = logging.getLogger("graph_explorer")
SESSION_TTL_S = 1800  # a session's state is dropped after this long without use (its model much sooner)
# Events that measure may all be in flight: they wait their turn in explorer.serving.queueing (which shows the wait
# and refuses past its limit) rather than invisibly in Gradio's queue.
MEASURE_EVENTS = limits.MAX_QUEUE + 1
RESIDENCY = Residency(limits.MAX_LIVE_MODELS)  # built models kept across every session of this server
EXPORTS = ExportDir()  # download files: session reports, deployment artefacts
CLAIM_BOARD = ClaimBoard()  # each claim's latest result, shown to every visitor of this server for a while
COMPILE_OPTIONS = ("compile_on", "backend", "dynamic", "mark", "fullgraph")


class Outputs:
    """An event's outputs, declared once by name. `components(name=...)` gives Gradio the list in this order;
    `fill(name=value)` gives a handler's return value with every output it does not name left unchanged."""

    def __init__(self, *names: str) -> None:
        self.names = names

    def components(self, **by_name: Any) -> list[Any]:
        assert set(by_name) == set(self.names), set(by_name) ^ set(self.names)
        return [by_name[n] for n in self.names]

    def fill(self, **values: Any) -> tuple:
        unknown = set(values) - set(self.names)
        assert not unknown, unknown
        return tuple(values.get(n, gr.skip()) for n in self.names)


PLAYGROUND = Outputs("session", "graph", "cards", "history", "diff", "report", "status", "open_module")
COMPILED = Outputs("session", "status", "cards", "timeline", "breaks", "figure", "fx_graph", "fx_code", "report")
LAB = Outputs("session", "status", "verdict", "table", "lengths", "time", "waste", "report")
DEPLOY = Outputs("status", "verdict", "table", "diffs", "autograd", "exported", "code", "downloads", "report")
DEBUG = Outputs("status", "verdict", "modes", "tracebacks", "nan", "comparison", "inspection", "report")
DDP = Outputs("status", "verdict", "endings", "costs", "timeline", "report")
CLAIM = Outputs("status", "figure", "numbers", "verdict", "report")
MODEL_CHOICE = Outputs(*(f"group:{m}" for m in ZOO), "model")
RESTORE = Outputs(*MODEL_CHOICE.names, "text", *(f"{m}.{k.name}" for m, k in control_specs()),
                  *COMPILE_OPTIONS)

CSS = """
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 8px; }
.card { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 10px; }
.card .label { font-size: 0.8em; color: var(--ge-subdued); }
.card .value { font-size: 1.45em; font-weight: 600; }
.card .detail { font-size: 0.75em; color: var(--ge-subdued); }
.explain { font-size: 0.92em; }
/* WCAG 2 AA contrast (4.5:1) for everything on the page, which a projector washes out further: Gradio's default
   greys (help lines, slider bounds, the footer), its orange primary buttons with white text, and its link blue on a
   grey group are all lighter than that (axe-core, tests/app/test_browser.py). Light theme only: dark keeps its own. */
:root .gradio-container:not(.dark) { --ge-subdued: var(--neutral-600); --block-info-text-color: var(--neutral-600);
  --body-text-color-subdued: var(--neutral-600); --link-text-color: #1d4ed8; --link-text-color-hover: #1e3a8a;
  --link-text-color-visited: #5b21b6; --button-primary-background-fill: #c2410c;
  --button-primary-background-fill-hover: #9a3412; --button-primary-text-color: white; }
.dark .gradio-container, .gradio-container.dark { --ge-subdued: var(--neutral-300); }
.gradio-container:not(.dark) .show-api, .gradio-container:not(.dark) .built-with { color: var(--neutral-700); }
.gradio-container .json-node:not(.dark-mode) { --text-color: #9a3412; --string-color: #b45309;
  --number-color: #0e7490; --bracket-color: #285e61; --square-bracket-color: #9f1239; --punctuation-color: #3f6f6e;
  --line-number-color: #4b5563; }
.mono textarea { font-family: var(--font-mono); }
/* Tables: a header breaks between words, never inside one ("co mp il es"); a table wider than its box scrolls
   sideways instead of squeezing columns, so a timeline's reasons and a lab's compiled columns stay readable. */
.gradio-container table th, .gradio-container table th * { word-break: keep-all !important;
  overflow-wrap: normal !important; hyphens: none; }
.gradio-container table td { min-width: 4em; }
.gradio-container .table-wrap { overflow-x: auto; }
/* Presentation mode, for a projector: larger text through the theme's own sizes (not a CSS zoom, which would cut
   off the figures and move their hover targets), and no side text (help lines, examples, explanations), so that
   the current input's graph and cards reach the first screen. The figures re-fit to their new width (_PRESENT_JS). */
body.ge-presentation .gradio-container { --text-xxs: 12px; --text-xs: 13px; --text-sm: 16px; --text-md: 18px;
  --text-lg: 21px; --text-xl: 26px; --text-xxl: 30px; --block-label-text-size: 15px; --block-info-text-size: 15px;
  --block-title-text-size: 16px; --section-header-text-size: 18px; }
body.ge-presentation .ge-aside, body.ge-presentation .explain, body.ge-presentation .info-text,
body.ge-presentation .card .detail { display: none; }
"""
# The page's figures are Plotly's, with `responsive` on: after the class changes the layout, each one is re-fitted
# to its container (Gradio sets window.Plotly once the first figure has loaded).
_PRESENT_JS = """(on) => {
  document.body.classList.toggle('ge-presentation', on);
  requestAnimationFrame(() => document.querySelectorAll('.js-plotly-plot').forEach(
    (el) => window.Plotly && window.Plotly.Plots.resize(el)));
  return [];
}"""
_PAGE_JS = """() => {
  // Gradio 6.31 marks an empty plot or JSON with a bare <div aria-label="Empty value">: ARIA forbids a label on a div
  // without a role (axe's aria-prohibited-attr). It is an image of nothing: say so.
  const label = () => document.querySelectorAll('div.empty[aria-label]:not([role])').forEach(
    (d) => d.setAttribute('role', 'img'));
  new MutationObserver(label).observe(document.body, {childList: true, subtree: true});
  label();
  const box = (t) => t instanceof HTMLInputElement && t.type === 'number';
  document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && box(e.target)) e.target.blur(); });
  document.addEventListener('focusin', (e) => { if (box(e.target)) e.target.dataset.settled = e.target.value; });
  document.addEventListener('change', (e) => {
    const t = e.target;
    if (!box(t)) return;
    let v = t.value === '' ? NaN : Number(t.value);
    if (Number.isNaN(v)) v = Number(t.dataset.settled ?? t.min);
    if (t.min !== '') v = Math.max(v, Number(t.min));
    if (t.max !== '') v = Math.min(v, Number(t.max));
    if (String(v) !== t.value) { t.value = String(v); t.dispatchEvent(new Event('input', {bubbles: true})); }
  }, true);
}"""


def _control(k: Knob) -> gr.components.Component:
    if k.type == "choice":
        return gr.Radio(list(k.choices), value=k.default, label=k.name, info=k.help)
    if k.type == "bool":
        return gr.Checkbox(value=k.default, label=k.name, info=k.help)
    if k.name == "seed":
        return gr.Number(value=k.default, label=k.name, info=k.help, precision=0, minimum=k.min, maximum=k.max)
    step = k.step or (1 if k.type == "int" else 0.01)
    return gr.Slider(k.min, k.max, value=k.default, step=step, label=k.name, info=k.help)


def _cards_html(cards: list[tuple[str, str, str]]) -> str:
    items = "".join(
        f'<div class="card"><div class="label">{html.escape(label)}</div>'
        f'<div class="value">{html.escape(value)}</div><div class="detail">{html.escape(detail)}</div></div>'
        for label, value, detail in cards
    )
    return f'<div class="cards">{items}</div>'


def _view(session: Session, view: View, drawn: bool) -> tuple:
    """A view's outputs; the graph only if not `drawn` already (sending a big figure again costs the server)."""
    graph = {} if drawn else {"graph": view.graph, "open_module": gr.update(choices=view.groups, value="")}
    return PLAYGROUND.fill(session=session, **graph, cards=_cards_html(view.cards), history=view.history,
                           diff=view.diff, report=view.report, status=view.status)


def run_playground(request: gr.Request, session: Session, model: str, text: str, compare: str,
                   *flat: Any, fresh: bool = False) -> Iterator[tuple]:
    """The Playground's one event: (re)configure, capture and draw, wait for the measurement queue, time, stream
    the view. `fresh`: measure the timings again even if another session's recent ones could be reused."""
    RESIDENCY.attach(request.session_hash, session)
    try:
        drawn = False
        for view in update(session, model, text, compare, values_for(model, list(flat)), measure_pool(), fresh):
            if isinstance(view, Progress):
                yield PLAYGROUND.fill(session=session, status=view)
            elif isinstance(view, GraphFirst):  # the new graph and its counts at once; the timings follow
                drawn = True
                yield PLAYGROUND.fill(graph=view.graph, open_module=gr.update(choices=view.groups, value=""),
                                      cards=_cards_html(view.cards), status=view.status)
            else:
                yield _view(session, view, drawn)
    except USER_ERRORS as e:
        raise gr.Error(str(e), title="Cannot run this input", print_exception=False) from None
    except CompileFailure as e:  # the measurement process died twice or timed out: the graph shown stays valid
        raise gr.Error(f"The graph above is this input's; its timing stopped: {e}", title="Timing stopped",
                       print_exception=False) from None
    except Exception:
        log.exception("run failed")
        raise gr.Error("The run failed inside the model; this session's history is unchanged. Try another "
                       "architecture or input.") from None


def run_fresh(request: gr.Request, session: Session, model: str, text: str, compare: str,
              *flat: Any) -> Iterator[tuple]:
    """*Measure again*: the same input, timed anew (never reused from another session)."""
    yield from run_playground(request, session, model, text, compare, *flat, fresh=True)


def run_compiled(session: Session, enabled: bool, backend: str, dynamic: str, mark: bool,
                 fullgraph: bool, progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
    """The compiled side: progress while the worker compiles, then the numbers; never blocks eager."""
    if not enabled or session.last is None:
        yield COMPILED.fill(session=session,
                            status="Compiled execution is off: tick *compile* to compare with torch.compile.")
        return
    try:
        options = CompileOptions(backend, dynamic, mark, fullgraph)
        for item in compiled_update(session, compile_service(session.id), options):
            if isinstance(item, Progress):
                progress(None, desc=item)
                yield COMPILED.fill(session=session, status=item)
            else:
                yield COMPILED.fill(session=session, status=item.status, cards=_cards_html(item.cards),
                                    timeline=item.timeline, breaks=item.breaks, figure=item.figure,
                                    fx_graph=item.graph, fx_code=item.code, report=item.report)
    except USER_ERRORS as e:
        yield COMPILED.fill(session=session, status=f"**Cannot compile**: {e}")
    except CompileFailure as e:
        gr.Warning(str(e))
        yield COMPILED.fill(session=session, status=f"**Compile stopped**: {e}")


def _lab_stream(session: Session, items: Iterator[Progress | LabView], progress: gr.Progress) -> Iterator[tuple]:
    """Progress messages to the status line (and the progress bar), views to every lab output."""
    for item in items:
        if isinstance(item, Progress):
            progress(None, desc=item)
            yield LAB.fill(session=session, status=item)
        else:
            yield LAB.fill(session=session, status=item.status, verdict=item.verdict, table=item.table,
                           lengths=item.lengths, time=item.time, waste=item.waste, report=item.report)


def run_lab_eager(session: Session, source: str, lines: str, n: float, distribution: str, min_len: float,
                  max_len: float, seed: float, bucket_width: float, request: gr.Request,
                  progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
    """The lab's eager half, in the measurement queue: progress per strategy, then the figures."""
    RESIDENCY.attach(request.session_hash, session)
    try:
        texts = lab_texts(source, lines, n, distribution, min_len, max_len, seed)
        yield from _lab_stream(session, lab_update(session, texts, int(bucket_width)), progress)
    except USER_ERRORS as e:
        raise gr.Error(str(e), title="Cannot run this batch", print_exception=False) from None
    except Exception:
        log.exception("batching lab failed")
        raise gr.Error("The batch failed inside the model; try a smaller batch or another architecture.") from None


def run_lab_compiled(session: Session, enabled: bool, backend: str,
                     progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
    """The lab's compiled half, in the compile queue, after the eager half."""
    if not enabled or session.lab is None:
        yield LAB.fill(session=session)
        return
    try:
        yield from _lab_stream(session, lab_compiled_update(session, backend, compile_service(session.id)), progress)
    except USER_ERRORS as e:
        yield LAB.fill(session=session, status=f"**Cannot compile**: {e}")


def _playground_lab(out: Outputs, session: Session, lab: str, updates: Callable[[RunResult], Iterator[Any]],
                    fields: Callable[[Any, RunResult], dict], progress: gr.Progress) -> Iterator[tuple]:
    """A lab that works on the Playground's latest run: progress messages to the status line (and the progress
    bar), then the view's fields; a refused input is said in the status line."""
    r = session.last
    if r is None:
        yield out.fill(status=f"Run an input in the Playground first: the {lab} works on that model and input.")
        return
    try:
        for item in updates(r):
            if isinstance(item, Progress):
                progress(None, desc=item)
                yield out.fill(status=item)
            else:
                yield out.fill(status=item.status, report=item.report, **fields(item, r))
    except USER_ERRORS as e:
        yield out.fill(status=f"**Cannot run the {lab}**: {e}")


def run_deploy_lab(session: Session, lengths: str, routes: list[str],
                   progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
    """Freeze the Playground's latest run (model, architecture, text) by every chosen route, in the deployment
    worker: progress per route, then the table, the figures and the downloads."""
    yield from _playground_lab(
        DEPLOY, session, "deployment lab",
        lambda r: deploy_update(deploy_service(), r.model, r.config, r.input.text, parse_lengths(lengths),
                                list(routes), EXPORTS.job_dir()),
        lambda v, r: {"verdict": v.verdict, "table": v.table, "diffs": v.diffs, "autograd": graph_figure(r),
                      "exported": v.graph, "code": v.code, "downloads": v.downloads},
        progress)


def run_debug_lab(session: Session, bug: str, modes: list[str],
                  progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
    """Inject the chosen bug into the Playground's latest run (model, architecture, text) and run it in each mode
    (compiled ones in the compile worker): progress, then the side-by-side view."""
    yield from _playground_lab(
        DEBUG, session, "debugging lab",
        lambda r: debug_update(compile_service(), r.model, r.config, bug, r.input.text, list(modes)),
        lambda v, r: {"verdict": v.verdict, "modes": v.modes, "tracebacks": v.tracebacks, "nan": v.nan,
                      "comparison": v.comparison, "inspection": v.inspection},
        progress)


class _DdpOwner:
    """The session whose distributed run is going (one at a time, server-wide): closing its page cancels it."""

    session: str | None = None


def run_ddp_lab(session: Session, scenario: str, world_size: float, backend: str, request: gr.Request,
                progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
    """Run a scenario on the Playground's model (or the scenario's own) in the distributed worker: the ranks'
    progress in the status line, then the timeline, the endings, the costs and the verdict."""
    r = session.last
    try:
        model, config, which = model_for(scenario, r.model if r else None, r.config if r else None)
        setup = ddp_setup(scenario, model, config, int(world_size), backend=backend)
        _DdpOwner.session = request.session_hash
        for item in ddp_update(ddp_service(), scenario, setup):
            if isinstance(item, Progress):
                progress(None, desc=item)
                yield DDP.fill(status=item)
            else:
                yield DDP.fill(status=f"{item.status} Model: {which}.", verdict=item.verdict, endings=item.endings,
                               costs=item.costs, timeline=item.timeline, report=item.report)
    except USER_ERRORS as e:
        yield DDP.fill(status=f"**Cannot run the scenario**: {e}")
    finally:
        _DdpOwner.session = None


def _workers() -> Workers:
    return Workers(compile_service(), deploy_service(), ddp_service())


def _claim_fill(view: ClaimView | None) -> tuple:
    if view is None:
        return CLAIM.fill(status="Not measured on this server lately: run the experiment.", figure=None,
                          numbers="", verdict="", report=None)
    return CLAIM.fill(status=view.status, figure=view.figure, numbers=_cards_html(view.numbers), verdict=view.verdict,
                      report=view.report)


def run_claim(claim_id: str, again: bool, progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
    """A claim card's button: the server's recent result, or the experiment with its progress."""
    try:
        for item in claim_update(CLAIM_BOARD, _workers(), claim_id, again):
            if isinstance(item, Progress):
                progress(None, desc=item)
                yield CLAIM.fill(status=item)
            else:
                yield _claim_fill(item)
    except USER_ERRORS as e:
        yield CLAIM.fill(status=f"**The experiment stopped**: {e}")


def _open_module(session: Session, module: str) -> Any:
    """Redraw the latest graph with one module's nodes drawn one by one (the counts stay those of the whole graph)."""
    figure = opened_graph(session, module or "")
    return gr.skip() if figure is None else figure


def _show_model(m: str) -> tuple:
    """Show the chosen model's controls and say what it is."""
    return MODEL_CHOICE.fill(**{f"group:{name}": gr.Group(visible=m == name) for name in ZOO},
                             model=gr.Dropdown(info=ZOO[m].summary))


def _link(model: str, text: str, *rest: Any) -> str:
    """An anchor to this exact state (relative: the browser resolves it against this page's address)."""
    *flat, compile_on, backend, dynamic, mark, fullgraph = rest
    try:
        state = LinkState(model, config_dict(make_config(model, values_for(model, flat))), text or "",
                          bool(compile_on), backend, dynamic, bool(mark), bool(fullgraph))
        query = state.query()
    except USER_ERRORS:
        return ""
    return (f'<a href="{html.escape(query)}" target="_blank" title="copy this link to hand out exactly this '
            'example">🔗 link to this state</a>')


def _restore(request: gr.Request) -> tuple:
    """Apply a state link (URL query parameters), or the default text: setting the (initially empty) input runs
    the Playground once, through its change event. A bad link is said, and the defaults open."""
    try:
        state = read_link({k: v for k, v in request.query_params.items() if k != "lesson"})  # see _open_lesson
    except USER_ERRORS as e:
        gr.Warning(f"This link could not be restored: {e}. The defaults are shown instead.")
        return RESTORE.fill(text=DEFAULT_TEXT)
    if state is None:
        return RESTORE.fill(text=DEFAULT_TEXT)
    controls = {f"{state.model}.{k}": v for k, v in state.config.items()}
    return RESTORE.fill(**{f"group:{name}": gr.Group(visible=state.model == name) for name in ZOO},
                        model=gr.Dropdown(value=state.model, info=ZOO[state.model].summary),
                        text=state.text or DEFAULT_TEXT, **controls,
                        compile_on=state.compile, backend=state.backend, dynamic=state.dynamic,
                        mark=state.mark_dynamic, fullgraph=state.fullgraph)


@dataclass
class Playground:
    """The Playground tab's components that events read or write."""

    model: gr.Dropdown
    groups: dict[str, gr.Group]
    controls: list[gr.components.Component]
    text: gr.Textbox
    example: gr.Radio
    compare: gr.Textbox
    status: gr.Markdown
    again: gr.Button
    cards: gr.HTML
    graph: gr.Plot
    open_module: gr.Dropdown
    history: gr.Plot
    diff: gr.Textbox
    raw: gr.JSON


@dataclass
class CompiledPanel:
    options: dict[str, gr.components.Component]  # COMPILE_OPTIONS, by name
    status: gr.Markdown
    cards: gr.HTML
    figure: gr.Plot
    breaks: gr.Markdown
    timeline: gr.Dataframe
    fx_graph: gr.Plot
    fx_code: gr.Code


def _header() -> tuple[gr.Checkbox, gr.HTML]:
    with gr.Row(equal_height=True):
        with gr.Column(scale=4):
            gr.Markdown("# Graph Explorer")
            gr.Markdown(
                "PyTorch builds the autograd graph **while your program runs** (define-by-run). Type any text "
                "and change the architecture: the graph below is the real one of that exact run, with its "
                "measured eager latency and memory.", elem_classes="ge-aside")
        with gr.Column(scale=1, min_width=220):
            present = gr.Checkbox(False, label="presentation mode", info="larger everything, for a projector")
            link = gr.HTML(label="link to this state")
    return present, link


def _playground_controls() -> tuple[gr.Dropdown, dict[str, gr.Group], list[gr.components.Component]]:
    model = gr.Dropdown([(e.title, e.name) for e in ZOO.values()], value=DEFAULT_MODEL,
                        label="model", info=ZOO[DEFAULT_MODEL].summary)
    controls, groups = [], {}
    specs = control_specs()
    for name in ZOO:
        with gr.Group(visible=name == DEFAULT_MODEL) as groups[name]:
            controls += [_control(k) for m, k in specs if m == name]
    return model, groups, controls


def _playground_tab() -> tuple[Playground, CompiledPanel]:
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            model, groups, controls = _playground_controls()
        with gr.Column(scale=3):
            # Empty until the page's load event fills it (the default or a link's text): that change is the first run.
            text = gr.Textbox("", label="input (each UTF-8 byte is one token)", lines=2,
                              max_lines=6, info=f"Up to {limits.MAX_TOKENS} tokens. Every edit runs it "
                              "(Enter adds a newline: a token too).")
            example = gr.Radio(list(EXAMPLES), label="examples of very different lengths", value=None,
                               elem_classes="ge-aside")
            compare = gr.Textbox("", label="compare with (optional): the graph is diffed against this input",
                                 lines=1, placeholder="e.g. a shorter sentence", elem_classes="ge-aside")
            with gr.Row(equal_height=True):
                status = gr.Markdown()
                again = gr.Button("Measure again", size="sm", variant="secondary", scale=0, min_width=160)
            cards = gr.HTML()
            gr.Markdown(
                "**What you see**: the autograd graph PyTorch recorded for this exact input, one node per "
                "operation backward will run, coloured by the module that made it, forward from left to "
                "right (hover for shapes and saved bytes). **Try** a 1-token input and then a paragraph, "
                "change the cell or the layers, and watch the graph, the cards and the history change.",
                elem_classes="explain")
            graph = gr.Plot(label="autograd graph")
            open_module = gr.Dropdown([("none: every module grouped", "")], value="", label="open a module",
                                 info="a big graph is drawn in groups: pick a module to draw its nodes one by one")
            gr.Markdown("**History**: every run of this session, latency (median, IQR bars) and peak memory "
                        "against input length, one line per architecture.", elem_classes="explain")
            with gr.Row():
                history = gr.Plot(label="history")
                with gr.Column():
                    diff = gr.Textbox(label="diff", lines=10, interactive=False, elem_classes="mono")
                    raw = gr.JSON(label="raw numbers (the same report as `python -m explorer inspect --json`)",
                                  open=False)
            compiled = _compiled_panel()
    return Playground(model, groups, controls, text, example, compare, status, again, cards, graph, open_module,
                      history, diff, raw), compiled


def _compiled_panel() -> CompiledPanel:
    with gr.Accordion("Compiled: the same input through torch.compile", open=True):
        gr.Markdown(
            "Compiling freezes what one run did into a static graph. Watch when it recompiles (and "
            "why), where the graph breaks, and how many calls it takes to pay the compile back. "
            "It runs in a separate worker process, after the eager numbers above."
        )
        with gr.Row():
            options = {
                "compile_on": gr.Checkbox(False, label="compile", info="torch.compile this model and input"),
                "backend": gr.Radio(list(BACKENDS), value="inductor", label="backend",
                                    info="inductor generates C++; aot_eager/eager only trace"),
                "dynamic": gr.Radio(["auto", "true", "false"], value="auto", label="dynamic",
                                    info="auto: static first, symbolic after a size change"),
                "mark": gr.Checkbox(False, label="mark_dynamic", info="sequence dimension dynamic up front"),
                "fullgraph": gr.Checkbox(False, label="fullgraph", info="fail on any graph break"),
            }
        status = gr.Markdown()
        cards = gr.HTML()
        with gr.Row():
            figure = gr.Plot(label="eager vs compiled against length")
            breaks = gr.Markdown()
        timeline = gr.Dataframe(headers=TIMELINE_COLUMNS, label="compile timeline of this session",
                                interactive=False, wrap=True)
        with gr.Row():
            fx_graph = gr.Plot(label="latest captured graph")
            fx_code = gr.Code(language="python", label="latest captured graph as code (print_readable)",
                              max_lines=30)
    return CompiledPanel(options, status, cards, figure, breaks, timeline, fx_graph, fx_code)


def _lab_tab(session: gr.State) -> None:
    gr.Markdown(
        "Sentences have different lengths. A dynamic graph can run each one as it is; a batch needs them "
        "padded to one shape, or sorted into buckets, or packed. This lab runs **the Playground's current model "
        "and architecture** on one batch with each strategy, checks every strategy's outputs against the "
        "per-sample loop, and measures time, memory and wasted work. Change the model in the Playground tab."
    )
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            source = gr.Radio(["generate", "typed"], value="generate", label="sentences",
                              info="generate N sentences, or type your own (one per line)")
            n = gr.Slider(1, limits.MAX_BATCH, value=64, step=1, label="N sentences")
            distribution = gr.Radio(list(DISTRIBUTIONS), value="zipf", label="length distribution",
                                    info="zipf: many short, a few very long")
            with gr.Row():
                min_len = gr.Number(5, label="min length", precision=0, minimum=1, maximum=limits.MAX_TOKENS)
                max_len = gr.Number(300, label="max length", precision=0, minimum=1, maximum=limits.MAX_TOKENS)
                seed = gr.Number(0, label="seed", precision=0, minimum=0)
            lines = gr.Textbox("", label="typed sentences (one per line)", lines=5, max_lines=12,
                               placeholder="Hi.\nA much longer sentence, to see what padding it to one length costs.")
            bucket_width = gr.Slider(1, 128, value=32, step=1, label="bucket width (tokens)",
                                     info="sentences whose lengths fall in the same range share a padded batch")
            with gr.Row():
                lab_compile = gr.Checkbox(False, label="also compile", info="each strategy, in the worker")
                lab_backend = gr.Radio(list(BACKENDS), value="aot_eager", label="backend")
            go_btn = gr.Button("Run the lab", variant="primary")
        with gr.Column(scale=3):
            status = gr.Markdown()
            verdict = gr.Markdown()
            table = gr.Dataframe(headers=LAB_COLUMNS, label="per strategy (whole batch; medians with their IQR)",
                                 interactive=False, wrap=True)
            with gr.Row():
                lengths_plot = gr.Plot(label="length histogram")
                waste_plot = gr.Plot(label="wasted work")
            time_plot = gr.Plot(label="time per strategy")
            raw = gr.JSON(label="raw numbers (the same report as `python -m explorer batch --json`)", open=False)
    outputs = LAB.components(session=session, status=status, verdict=verdict, table=table, lengths=lengths_plot,
                             time=time_plot, waste=waste_plot, report=raw)
    go_btn.click(run_lab_eager, [session, source, lines, n, distribution, min_len, max_len, seed, bucket_width],
                 outputs, api_visibility="private", concurrency_id="measure", concurrency_limit=MEASURE_EVENTS,
                 show_progress="minimal").then(run_lab_compiled, [session, lab_compile, lab_backend], outputs,
                                               api_visibility="private", concurrency_id="compile",
                                               concurrency_limit=1, show_progress="minimal")


def _deploy_tab(session: gr.State) -> None:
    gr.Markdown(
        "Deploying means freezing: a TorchScript trace or script, a `torch.export` program, an ONNX file run by "
        "ONNX Runtime, an AOTInductor package. Each one keeps **one run's decisions**. This lab freezes **the "
        "Playground's latest run** (its model, architecture and text) by every route, for real, then runs each "
        "artefact on other lengths and on another text of the same length against eager: which routes work, which "
        "fail loudly (with your line), and which run without an error and return **wrong answers**. Try the early-"
        "exit model, then its `exit_with=cond` variant; the RNN, then `loop=scan`."
    )
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            lengths = gr.Textbox(",".join(map(str, DEFAULT_LENGTHS)), label="other lengths to check (tokens)",
                                 info=f"comma-separated, 1 to {limits.MAX_TOKENS}; the current input is always "
                                      "checked, and another text of its length")
            routes = gr.CheckboxGroup(list(ROUTES), value=list(ROUTES), label="routes",
                                      info="aot: AOTInductor compiles C++ (tens of seconds)")
            go_btn = gr.Button("Freeze the current model", variant="primary")
        with gr.Column(scale=3):
            status = gr.Markdown()
            verdict = gr.Markdown()
            table = gr.Dataframe(headers=DEPLOY_COLUMNS, label="per route", interactive=False, wrap=True)
            diffs = gr.Plot(label="max |diff| vs eager per input")
            with gr.Row():
                autograd = gr.Plot(label="autograd graph of this input (eager)")
                exported = gr.Plot(label="the exported program's graph")
            code = gr.Code(language="python", label="the exported program as code", max_lines=30)
            downloads = gr.File(label="artefacts that were built (how to load each: under the verdict)",
                                file_count="multiple", interactive=False)
            raw = gr.JSON(label="raw numbers (the same report as `python -m explorer deploy --json`)", open=False)
    outputs = DEPLOY.components(status=status, verdict=verdict, table=table, diffs=diffs, autograd=autograd,
                                exported=exported, code=code, downloads=downloads, report=raw)
    go_btn.click(run_deploy_lab, [session, lengths, routes], outputs, api_visibility="private",
                 concurrency_id="deploy", concurrency_limit=1, show_progress="minimal")


def _debug_tab(session: gr.State) -> None:
    gr.Markdown(
        "Dynamic graphs are said to be easier to debug: the error names the line that caused it, while it "
        "happens. This lab injects a bug into **the Playground's latest run** (its model, architecture and text) "
        "and runs it eagerly, under `torch.compile` with three backends, and traced at 8 tokens: how long until "
        "it fails, and what the traceback says. For a NaN: which of three methods finds the line. For a silent "
        "bug: the comparison that shows it. And a hook eager mode allows, under compile."
    )
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            bug = gr.Radio([(b.title, b.name) for b in BUGS.values()], value="shape", label="bug",
                           info="each a hook on the model's embeddings, in models/bugs.py")
            modes = gr.CheckboxGroup(list(MODES), value=["eager", "compiled (eager)", "traced"], label="modes",
                                     info="compiled modes run in the compile worker; inductor compiles C++")
            go_btn = gr.Button("Run the bug", variant="primary")
        with gr.Column(scale=3):
            status = gr.Markdown()
            verdict = gr.Markdown()
            mode_table = gr.Dataframe(headers=MODE_COLUMNS, label="per mode", interactive=False, wrap=True)
            nan = gr.Dataframe(headers=NAN_COLUMNS, label="where did the NaN come from (NaN bugs)",
                               interactive=False, wrap=True)
            with gr.Row():
                comparison = gr.Plot(label="against the un-bugged model")
                inspection = gr.Plot(label="a recording hook, eager vs compiled")
            with gr.Accordion("the tracebacks, as printed", open=False):
                tracebacks = gr.Markdown()
            raw = gr.JSON(label="raw numbers (the same report as `python -m explorer debug --json`)", open=False)
    outputs = DEBUG.components(status=status, verdict=verdict, modes=mode_table, tracebacks=tracebacks, nan=nan,
                               comparison=comparison, inspection=inspection, report=raw)
    go_btn.click(run_debug_lab, [session, bug, modes], outputs, api_visibility="private",
                 concurrency_id="compile", concurrency_limit=1, show_progress="minimal")


def _ddp_tab(session: gr.State) -> None:
    gr.Markdown(
        "Several training processes on this machine, joined by `torch.distributed` (gloo, loopback), with "
        "DistributedDataParallel around **the Playground's model** (or the scenario's own, said in the status). "
        "Each scenario reproduces what dynamic graphs do to DDP, for real: the error each rank meets, the signal "
        "that kills one, and per rank, step by step, the time computing, communicating and **waiting**. One run "
        "at a time on the whole server: the processes take every core, and the Playground's timings wait for them."
    )
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            scenario = gr.Radio([(s.title, s.name) for s in SCENARIOS.values()], value="unused", label="scenario",
                                info="; ".join(f"{s.title}: {s.summary}" for s in SCENARIOS.values()))
            world = gr.Dropdown(list(range(2, max(2, max_world_size()) + 1)), value=2, label="processes",
                                info=f"one per core this server may use ({max_world_size()})")
            backend = gr.Radio(["aot_eager", "inductor"], value="aot_eager", label="backend (compiled DDP)",
                               info="inductor compiles C++ in every rank: minutes")
            go_btn = gr.Button("Run the scenario", variant="primary")
        with gr.Column(scale=3):
            status = gr.Markdown()
            verdict = gr.Markdown()
            timeline = gr.Plot(label="per rank: compute, communication, waiting")
            endings = gr.Markdown()
            costs = gr.Dataframe(headers=COST_COLUMNS, label="measured costs", interactive=False, wrap=True)
            raw = gr.JSON(label="raw numbers (the same report as `python -m explorer ddp --json`)", open=False)
    outputs = DDP.components(status=status, verdict=verdict, endings=endings, costs=costs, timeline=timeline,
                             report=raw)
    go_btn.click(run_ddp_lab, [session, scenario, world, backend], outputs, api_visibility="private",
                 concurrency_id="ddp", concurrency_limit=1, show_progress="minimal")


@dataclass
class ClaimCard:
    """One claim's card: what is claimed, the buttons, and what the experiment measured."""

    header: gr.Markdown
    run: gr.Button
    again: gr.Button
    outputs: list[Any]  # CLAIM's components, in order


def _claim_header(c: Claim, number: int | None) -> str:
    """The card's claim and experiment; in a lesson (`number` None) the experiment only: the step states the claim."""
    where = (f'<a href="{html.escape(c.reproduce)}" target="_blank">reproduce it in the Playground</a>'
             if c.reproduce.startswith("?") else f"reproduce it in the {html.escape(c.reproduce)}")
    claim = f"### {number}. “{c.statement}”\n" if number is not None else ""
    return f"{claim}{c.experiment} ({where})"


def _claim_card(c: Claim, number: int | None) -> ClaimCard:
    header = gr.Markdown(_claim_header(c, number), elem_classes=None if number else "ge-aside")
    with gr.Row():
        run = gr.Button("Run the experiment", variant="primary", scale=0, min_width=200)
        again = gr.Button("Measure again", scale=0, min_width=160)
    status = gr.Markdown()
    with gr.Row():
        with gr.Column(scale=3):
            figure = gr.Plot(show_label=False)
        with gr.Column(scale=2, min_width=280):
            verdict = gr.Markdown()
            numbers = gr.HTML()
    with gr.Accordion("raw numbers (the same as `python -m explorer claim --json`)", open=False):
        raw = gr.JSON(show_label=False)
    return ClaimCard(header, run, again, CLAIM.components(status=status, figure=figure, numbers=numbers,
                                                        verdict=verdict, report=raw))


def _wire_claim(card: ClaimCard, claim_id: Callable[..., str], inputs: list[Any]) -> None:
    """Both buttons run the card's claim (from `inputs`: a fixed one, or the lesson's step); one at a time."""
    for button, again in ((card.run, False), (card.again, True)):
        def go(*values: Any, again: bool = again, progress: gr.Progress = gr.Progress()) -> Iterator[tuple]:  # noqa: B008
            yield from run_claim(claim_id(*values), again, progress)
        button.click(go, inputs, card.outputs, api_visibility="private", concurrency_id="claims",
                     concurrency_limit=1, show_progress="minimal")


def _claims_tab() -> list[Any]:
    """Every claim's card in order; returns the outputs that the tab's opening fills from the server's board."""
    gr.Markdown(
        "What people say about dynamic graphs, each tested **on this server**: one button runs the experiment "
        "(built from the Playground's and the labs' engines), and a verdict is computed from what it measured. "
        f"A result is shown to everyone on this server for {limits.CLAIMS_TTL_S / 60:.0f} minutes "
        "(`GE_CLAIMS_TTL_S`), labelled with when it was measured; *Measure again* runs it anew.",
        elem_classes="explain")
    outputs = []
    for number, c in enumerate(CLAIMS.values(), 1):
        with gr.Group():
            card = _claim_card(c, number)
        _wire_claim(card, lambda c=c: c.id, [])
        outputs += card.outputs
    return outputs


def _cached_claims() -> tuple:
    return tuple(x for c in CLAIMS for x in _claim_fill(cached_view(CLAIM_BOARD, c)))


@dataclass
class LessonPanel:
    number: gr.State
    text: gr.Markdown
    link: gr.HTML
    card: ClaimCard


def _lesson_link(number: int) -> str:
    return (f'<a href="?lesson={number}" target="_blank" title="open the class at this step">🔗 link to step '
            f"{number}</a>")


def _lesson_step(number: int) -> tuple:
    """Everything a step shows: its text, its card's claim and the server's recent result for it."""
    s = step(number)
    c = CLAIMS[s.claim]
    return (number, step_markdown(number), _lesson_link(number), _claim_header(c, None),
            *_claim_fill(cached_view(CLAIM_BOARD, c.id)))


def _lessons_tab() -> LessonPanel:
    gr.Markdown(f"A {sum(s.minutes for s in STEPS)}-minute class over the claims, one card per step: what to do, "
                "what to notice, one question for the room. Each step has a link of its own.", elem_classes="explain")
    number = gr.State(1)
    with gr.Row():
        with gr.Column(scale=2, min_width=300):
            text = gr.Markdown(step_markdown(1))
            with gr.Row():
                prev = gr.Button("← previous", scale=0, min_width=120)
                nxt = gr.Button("next →", variant="primary", scale=0, min_width=120)
            link = gr.HTML(_lesson_link(1))
        with gr.Column(scale=3):
            card = _claim_card(CLAIMS[STEPS[0].claim], None)
    panel = LessonPanel(number, text, link, card)
    outputs = [number, text, link, card.header, *card.outputs]
    prev.click(lambda n: _lesson_step(max(1, n - 1)), number, outputs, queue=False, api_visibility="private")
    nxt.click(lambda n: _lesson_step(min(len(STEPS), n + 1)), number, outputs, queue=False,
              api_visibility="private")
    _wire_claim(card, lambda n: step(n).claim, [number])
    return panel


def _downloads_panel(session: gr.State) -> None:
    with gr.Accordion("Download this session", open=False):
        gr.Markdown("Your measurements as CSV (one row per run, with the spread), and a self-contained HTML "
                    "report (figures inline, the configs, the machine): it opens offline.",
                    elem_classes="explain")
        export_btn = gr.Button("Prepare CSV and HTML report")
        downloads = gr.File(label="downloads", file_count="multiple", interactive=False)
    export_btn.click(lambda s: EXPORTS.write(s), session, downloads, api_visibility="private",
                     concurrency_id="export", concurrency_limit=2)


def _limits_panel() -> None:
    with gr.Accordion("Limits of this server", open=False):
        gr.Markdown("What this server refuses or cuts, so that one request cannot take it down for everyone. "
                    "Running it yourself? Raise any of them with its environment variable.")
        gr.Dataframe(limits.table(), headers=["variable", "in force", "what it limits"], interactive=False,
                     wrap=True)


def _wire_playground(demo: gr.Blocks, session: gr.State, p: Playground, c: CompiledPanel,
                     link: gr.HTML) -> None:
    """Every edit runs the Playground, then refreshes the state link and the compiled side."""
    outputs = PLAYGROUND.components(session=session, graph=p.graph, open_module=p.open_module, cards=p.cards,
                                    history=p.history, diff=p.diff,
                                    report=p.raw, status=p.status)
    run = {"fn": run_playground, "inputs": [session, p.model, p.text, p.compare, *p.controls], "outputs": outputs,
           "trigger_mode": "always_last", "concurrency_id": "measure", "concurrency_limit": MEASURE_EVENTS,
           "show_progress": "minimal"}
    options = [c.options[n] for n in COMPILE_OPTIONS]
    compiled = {"fn": run_compiled, "inputs": [session, *options],
                "outputs": COMPILED.components(session=session, status=c.status, cards=c.cards,
                                               timeline=c.timeline, breaks=c.breaks, figure=c.figure,
                                               fx_graph=c.fx_graph, fx_code=c.fx_code, report=p.raw),
                "concurrency_id": "compile", "concurrency_limit": 1, "show_progress": "minimal",
                "trigger_mode": "always_last"}
    link_update = {"fn": _link, "inputs": [p.model, p.text, *p.controls, *options], "outputs": link,
                   "queue": False, "api_visibility": "private", "show_progress": "hidden"}

    def after_run(event: Any) -> None:
        event.then(**link_update).then(api_visibility="private", **compiled)

    restore_outputs = RESTORE.components(
        **{f"group:{m}": g for m, g in p.groups.items()}, model=p.model, text=p.text,
        **{f"{m}.{k.name}": ctl for (m, k), ctl in zip(control_specs(), p.controls, strict=True)},
        **c.options)
    # `.change` on the text boxes: typing, paste, cut, delete, undo, drag-and-drop, an example, a restored link
    # all change the value, and each settled value runs once (an unchanged input is not re-run: see `update`).
    after_run(p.text.change(api_name="edit", **run))
    after_run(p.again.click(api_visibility="private", **{**run, "fn": run_fresh}))
    p.compare.change(api_name="edit_compare", **run)
    for ctl in p.controls:  # a settled value: a slider released or its box left/entered, not every keystroke
        for event in _settled_events(ctl):
            after_run(event(api_visibility="private", **run))
    model_choice = MODEL_CHOICE.components(**{f"group:{m}": g for m, g in p.groups.items()}, model=p.model)
    after_run(p.model.input(_show_model, inputs=p.model, outputs=model_choice, api_name="select_model",
                            queue=False).then(api_visibility="private", **run))
    p.example.input(lambda k: EXAMPLES[k], inputs=p.example, outputs=p.text, api_name="example", queue=False)
    p.open_module.input(_open_module, inputs=[session, p.open_module], outputs=p.graph, api_visibility="private",
                        show_progress="hidden")
    for i, option in enumerate(options):
        option.input(**link_update)  # at once: a link copied while the compile runs carries the options
        option.input(api_name="compile" if i == 0 else None, api_visibility="public" if i == 0 else "private",
                     **compiled)
    # Queued (not queue=False) so that a bad link's warning reaches the page.
    demo.load(_restore, None, restore_outputs, api_name="load", concurrency_limit=None, show_progress="hidden")


def _settled_events(control: gr.components.Component) -> list[Any]:
    """The events that mean "this value is chosen": a slider's release (mouse up, or leaving its number box,
    which Enter does too: see _PAGE_JS; `.input` would fire for every prefix typed), a number box's blur, a
    click on anything else."""
    if isinstance(control, gr.Slider):
        return [control.release]
    if isinstance(control, gr.Number):
        return [control.blur]
    return [control.input]


def build_app() -> gr.Blocks:
    with gr.Blocks(title="Graph Explorer") as demo:
        session = gr.State(lambda: Session(residency=RESIDENCY), time_to_live=SESSION_TTL_S)
        present, link = _header()
        with gr.Tabs() as tabs:
            with gr.Tab("Playground", id="playground"):
                playground, compiled = _playground_tab()
            with gr.Tab("Batching lab", id="batching"):
                _lab_tab(session)
            with gr.Tab("Deployment lab", id="deployment"):
                _deploy_tab(session)
            with gr.Tab("Debugging lab", id="debugging"):
                _debug_tab(session)
            with gr.Tab("Multi-process lab", id="ddp"):
                _ddp_tab(session)
            with gr.Tab("Claims", id="claims") as claims_tab:
                claim_outputs = _claims_tab()
            with gr.Tab("Lessons", id="lessons"):
                lesson = _lessons_tab()
        claims_tab.select(_cached_claims, None, claim_outputs, queue=False, api_visibility="private")
        demo.load(_open_lesson, None, [tabs, lesson.number, lesson.text, lesson.link, lesson.card.header,
                                       *lesson.card.outputs], api_visibility="private", concurrency_limit=None,
                  show_progress="hidden")  # queued: a bad step's warning reaches the page
        _downloads_panel(session)
        _limits_panel()
        _wire_playground(demo, session, playground, compiled, link)
        present.change(None, present, None, js=_PRESENT_JS)
        demo.unload(_closed)
        gr.api(_api_inspect, api_name="inspect", concurrency_id="measure", concurrency_limit=MEASURE_EVENTS)
        gr.api(_api_batch, api_name="batch", concurrency_id="measure", concurrency_limit=MEASURE_EVENTS)
        gr.api(_api_deploy, api_name="deploy", concurrency_id="deploy", concurrency_limit=1)
        gr.api(_api_debug, api_name="debug", concurrency_id="compile", concurrency_limit=1)
        gr.api(_api_ddp, api_name="ddp", concurrency_id="ddp", concurrency_limit=1)
        gr.api(_api_claim, api_name="claim", concurrency_id="claims", concurrency_limit=1)
    return demo


def _open_lesson(request: gr.Request) -> tuple:
    """`?lesson=N` opens the Lessons tab at step N (a bad N is said, and step 1 opens); other links leave it."""
    raw = request.query_params.get("lesson")
    if raw is None:
        return (gr.skip(),) * (5 + len(CLAIM.names))
    try:
        shown = _lesson_step(int(raw))
    except (ValueError, *USER_ERRORS):
        gr.Warning(f"This link's lesson step {raw!r} does not exist: the lesson has steps 1 to {len(STEPS)}.")
        shown = _lesson_step(1)
    return (gr.Tabs(selected="lessons"), *shown)


def _api_inspect(model: str, config_json: str, text: str, compare: str = "", backend: str = "",
                 dynamic: str = "auto", mark_dynamic: bool = False, fullgraph: bool = False) -> dict:
    """Run `text` on `model` with a JSON object of config values; returns the run's report (timed anew, never
    reused from another session). With a `backend` (inductor, aot_eager, eager) the report gains `compiled`
    and `timeline`."""
    values = _config_values(config_json)
    if text == "":  # the UI's empty box is a pause; here there is no previous run to keep
        raise gr.Error(empty_message(), print_exception=False)
    session = Session()
    try:
        *_, view = update(session, model, text, compare, values, measure_pool(), fresh=True)
        if isinstance(view, GraphFirst):  # captured, but too long to time within GE_MAX_RUN_S
            raise InputError(view.status)
        if not backend:
            return view.report
        options = CompileOptions(backend, dynamic, mark_dynamic, fullgraph)
        *_, compiled = compiled_update(session, compile_service(session.id), options)
    except (*USER_ERRORS, CompileFailure) as e:
        raise gr.Error(str(e), print_exception=False) from None
    return compiled.report


def _closed(request: gr.Request) -> None:
    """The tab closed: free its session's model and last run now, not when the state's TTL expires; stop its
    distributed run, if one is going (its processes are reaped with the worker)."""
    RESIDENCY.close(request.session_hash)
    if _DdpOwner.session == request.session_hash:
        ddp_service().cancel()


def _config_values(config_json: str) -> dict:
    try:
        values = json.loads(config_json or "{}")
    except json.JSONDecodeError as e:
        raise gr.Error(f"config must be a JSON object: {e.msg}") from None
    if not isinstance(values, dict):
        raise gr.Error("config must be a JSON object, e.g. {\"layers\": 2}")
    return values


def _api_batch(model: str, config_json: str = "{}", lines: str = "", n: int = 64, distribution: str = "zipf",
               min_len: int = 5, max_len: int = 300, seed: int = 0, bucket_width: int = 32,
               backend: str = "") -> dict:
    """The batching lab: `lines` (one sentence per line) or, when empty, `n` generated sentences; every
    strategy timed, counted and checked. With a `backend` each strategy is also compiled. Returns the
    report (`strategies`: name, supported, note, forward_ms, train_step_ms, ... as in the CLI)."""
    values = _config_values(config_json)
    session = Session()
    try:
        session.configure(model, values)
        texts = lab_texts("typed" if lines.strip() else "generate", lines, n, distribution, min_len, max_len, seed)
        *_, view = lab_update(session, texts, int(bucket_width))
        if backend:
            *_, view = lab_compiled_update(session, backend, compile_service(session.id))
    except USER_ERRORS as e:
        raise gr.Error(str(e), print_exception=False) from None
    return view.report


def _api_deploy(model: str, config_json: str = "{}", text: str = DEFAULT_TEXT, lengths: str = "8,32,128",
                routes: str = "") -> dict:
    """The deployment lab: freeze `model` with a JSON object of config values at `text` by each route (comma-
    separated; empty: all), and check every artefact against eager at `lengths`. Returns the report (`verdict`,
    `routes`: route, outcome, error, where, checks, artefact_bytes, latency, eager, speedup, notes, ...)."""
    values = _config_values(config_json)
    try:
        config = make_config(model, values)
        chosen = [r.strip() for r in routes.split(",") if r.strip()] or list(ROUTES)
        *_, view = deploy_update(deploy_service(), model, config, text, parse_lengths(lengths), chosen,
                                 EXPORTS.job_dir())
    except USER_ERRORS as e:
        raise gr.Error(str(e), print_exception=False) from None
    return view.report


def _api_debug(model: str, config_json: str = "{}", bug: str = "shape", text: str = DEFAULT_TEXT,
               modes: str = "eager,compiled (eager),traced") -> dict:
    """The debugging lab: inject `bug` into `model` (a JSON object of config values) and run `text` in each mode
    (comma-separated). Returns the report (`verdict`, `modes`, `nan`, `comparison`, `graph_change`,
    `inspection`)."""
    values = _config_values(config_json)
    try:
        config = make_config(model, values)
        chosen = [m.strip() for m in modes.split(",") if m.strip()] or list(MODES)
        *_, view = debug_update(compile_service(), model, config, bug, text, chosen)
    except USER_ERRORS as e:
        raise gr.Error(str(e), print_exception=False) from None
    return view.report


def _api_ddp(scenario: str, model: str, config_json: str = "{}", world_size: int = 2, steps: int = 6,
             backend: str = "aot_eager") -> dict:
    """The multi-process lab: run `scenario` (unused, stragglers, disagree, uneven, compiled) on `model` with a
    JSON object of config values in `world_size` processes. Returns the report (`verdict`, `runs` with every
    rank's segments, values, error and exit, `costs`, `endings`, `machine`), as `python -m explorer ddp --json`."""
    values = _config_values(config_json)
    try:
        setup = ddp_setup(scenario, model, make_config(model, values), int(world_size), int(steps), backend)
        *_, view = ddp_update(ddp_service(), scenario, setup)
    except USER_ERRORS as e:
        raise gr.Error(str(e), print_exception=False) from None
    return view.report


def _api_claim(claim: str, again: bool = False) -> dict:
    """Run one claim's experiment (or return this server's recent result of it); returns its report.

    claim: one of shape, padding, rebuild, debugging, speed, overhead, deploying, distributed.
    again: measure anew even if this server measured it lately."""
    try:
        *_, view = claim_update(CLAIM_BOARD, _workers(), claim, bool(again))
    except USER_ERRORS as e:
        raise gr.Error(str(e), print_exception=False) from None
    assert isinstance(view, ClaimView)
    return view.report


def _start_background_work() -> None:
    """Pay one-time costs off the first click: the profiler, the meta device, inductor's toolchain."""
    pin_threads()
    warm_profiler()
    try:
        pool = measure_pool()  # on Ray, a cluster too small for the pools stops the launch with the reason
    except RuntimeError as e:
        raise SystemExit(f"Graph Explorer cannot start: {e}") from None
    threading.Thread(target=pool.start, daemon=True, name="measurement-warm-up").start()
    # The first parameter count on the meta device imports torch's reference ops (seconds): not on a first click.
    threading.Thread(target=warm_param_count, daemon=True, name="meta-warm-up").start()
    if os.environ.get("GE_WARM_COMPILE", "1") != "0":
        threading.Thread(target=lambda: log.info("compile cache warm: %s", warm_compile_cache(compile_service())),
                         daemon=True, name="compile-warm-up").start()


def main() -> None:
    limit_malloc_arenas()  # first: before any thread exists
    keep_off_measure_cores()  # every server thread and the compile worker inherit this; timings move over
    logging.basicConfig(level=logging.INFO)
    _start_background_work()
    demo = build_app()
    freeze_startup_objects()
    demo.queue(max_size=3 * MEASURE_EVENTS, default_concurrency_limit=1)
    host = os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    log.info("Graph Explorer on %s, measuring with %s", f"http://{host}:{port}", describe())
    demo.launch(server_name=host, server_port=port, css=CSS, js=_PAGE_JS, footer_links=["api", "gradio"],
                app_kwargs={"middleware": [Middleware(LongAddressGuard)]},
                max_threads=MEASURE_EVENTS + 16)  # every queued run holds a thread while it waits its turn


if __name__ == "__main__":
    main()
