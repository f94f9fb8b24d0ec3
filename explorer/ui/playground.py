"""The Playground tab: a model's controls, the input, the graph and its cards, the history and the diff, and the
compiled side; every edit runs the Playground once, then refreshes the state link and the compiled side. Each
handler returns only the outputs it changes ({component: value})."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer.api import config_values
from explorer.claims.room import RoomRun
from explorer.compile.options import BACKENDS, CompileOptions
from explorer.core import limits
from explorer.core.errors import USER_ERRORS, InputError
from explorer.core.examples import DEFAULT_TEXT, EXAMPLES
from explorer.core.queues import Queue
from explorer.runs.session import DEFAULT_MODEL, Session
from explorer.server import MEASURE_EVENTS, RESIDENCY, ROOMS
from explorer.serving.placement import compile_service, measure_pool
from explorer.serving.statelink import LinkState, read_link
from explorer.sources.registry import SOURCES, source
from explorer.ui.address import PAGE_PARAMS
from explorer.ui.controls import cards_html, control
from explorer.ui.endpoints import refusing
from explorer.ui.kernels import KernelsPanel, kernels_panel, wire_kernels
from explorer.ui.python_views import PythonViews, python_views, wire_python_views
from explorer.ui.stream import Updates, streamed
from explorer.views.compiled import TIMELINE_COLUMNS, compiled_update, pending_cards
from explorer.views.playground import (
    GraphFirst,
    View,
    control_specs,
    openable,
    opened_graph,
    update,
    values_for,
)
from models.config import config_dict, echoed

COMPILE_OPTIONS = ("compile_on", "backend", "dynamic", "mark", "fullgraph")


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
    kernels: KernelsPanel


@dataclass
class Playground:
    """The Playground tab's components that events read or write."""

    model: gr.Dropdown
    groups: dict[str, gr.Group]
    controls: list[gr.components.Component]  # one per (model, knob) of control_specs()
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
    compiled: CompiledPanel
    python: PythonViews  # the lines that ran, the branches, where the time went

    def outputs(self, session: gr.State) -> list[Any]:
        """The run's outputs, in the order the /edit endpoint answers."""
        return [session, self.graph, self.cards, self.history, self.diff, self.raw, self.status, self.open_module]

    def compiled_outputs(self, session: gr.State) -> list[Any]:
        """The compiled side's outputs, in the order the /compile endpoint answers."""
        c = self.compiled
        return [session, c.status, c.cards, c.timeline, c.breaks, c.figure, c.fx_graph, c.fx_code, self.raw]

    def model_choice(self) -> list[Any]:
        return [*self.groups.values(), self.model]

    def restored(self) -> list[Any]:
        return [*self.model_choice(), self.text, *self.controls, *self.compiled.options.values()]

    def show_model(self, name: str) -> Updates:
        """The chosen model's controls shown, and what it is."""
        source(name)  # an unknown name (the API's /select_model) is refused with its one line
        return {**{g: gr.Group(visible=m == name) for m, g in self.groups.items()},
                self.model: gr.Dropdown(value=name, info=SOURCES[name].summary)}


def playground_tab() -> Playground:
    with gr.Row(elem_classes="ge-playground"):
        with gr.Column(scale=1, min_width=280):
            model = gr.Dropdown([(s.title, s.name) for s in SOURCES.values()], value=DEFAULT_MODEL,
                                label="model", info=SOURCES[DEFAULT_MODEL].summary)
            controls, groups = [], {}
            for name in SOURCES:
                with gr.Group(visible=name == DEFAULT_MODEL) as groups[name]:
                    controls += [control(k) for m, k in control_specs() if m == name]
        with gr.Column(scale=3, elem_classes="ge-main"):  # first on a phone (theme.CSS): the input, then the graph
            # Empty until the page's load event fills it (the default or a link's text): that change is the first run.
            text = gr.Textbox("", label="input (each UTF-8 byte is one token)", lines=2, elem_classes="ge-input",
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
            graph = gr.Plot(label="autograd graph", elem_classes="ge-graph")
            open_module = gr.Dropdown([("none: every module grouped", "")], value="", label="open a module",
                                      info="a big graph is drawn in groups: pick a module to draw its nodes one by "
                                           "one")
            python = python_views()
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
                      history, diff, raw, compiled, python)


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
        kernels = kernels_panel()
    return CompiledPanel(options, status, cards, figure, breaks, timeline, fx_graph, fx_code, kernels)


def wire_playground(linked: gr.Textbox, session: gr.State, p: Playground, link: gr.HTML, tab: gr.Tab) -> None:
    """Every edit runs the Playground, then refreshes the state link and the compiled side; opening its `tab`
    gives the link back to the Playground's state (the Lessons tab lends it to its step); a state link in the page's
    address (`linked`, explorer/ui/address.py) is restored."""
    c = p.compiled

    def shown(s: Session, item: GraphFirst | View, drawn: list[bool], groups: list[tuple[str, str]]) -> Updates:
        # the raw numbers too: a capture's own so far (never the previous run's beside this one's graph)
        out: Updates = {session: s, p.cards: cards_html(item.cards), p.status: item.status, p.raw: item.report,
                        p.diff: item.diff}
        if isinstance(item, GraphFirst) or not drawn[0]:  # a big figure is sent once per run
            # the menu's choices only when they changed: an update rebuilds the component and its config in Gradio,
            # a plain value (the menu back to "every module grouped") does not
            out |= {p.graph: item.graph,
                    p.open_module: "" if item.groups == groups else gr.update(choices=item.groups, value="")}
        if isinstance(item, GraphFirst):
            drawn[0] = True
        else:
            out |= {p.history: item.history}
        return out

    def measured(request: gr.Request, s: Session, model: str, text: str, compare: str, values: Any,
                 fresh: bool = False, keyed: bool = False) -> Iterator[Updates]:
        """The Playground's one run: (re)configure, capture and draw, wait for the measurement queue, time, stream
        the view. `fresh`: measure again even if another session's recent timings could be reused; `keyed`: the
        text came from typing (a partial sentence is replaced in the history by the next, see Session.typing)."""
        RESIDENCY.attach(request.session_hash, s)
        drawn, groups = [False], openable(s.last) if s.last else []  # the menu as the last run left it
        room = s.room if s.last is not None else None  # (a page's own first text, a link's or the default, is
        # nobody's input)

        def show(item: Any) -> Updates:
            # a page in a class's room: its input goes to the room's plot once captured (its tokens and nodes are
            # all the plot needs), before the page shows it: a reveal right after the graph shows has it
            if room and isinstance(item, GraphFirst) and "error" not in item.report:
                ROOMS.ran(*room, RoomRun(item.report["arch"], item.report["tokens"], item.report["graph"]["nodes"]))
            return shown(s, item, drawn, groups)

        items = update(s, model, text, compare, values, measure_pool(), fresh, keyed)
        yield from streamed(items, show, p.status, "Cannot run this input", toast=True)

    def run(request: gr.Request, s: Session, model: str, text: str, compare: str, *flat: Any) -> Iterator[Updates]:
        """The page's edits: every control's value, of which the chosen model's are its config."""
        yield from measured(request, s, model, text, compare, values_for(model, list(flat)))

    def typed(request: gr.Request, s: Session, model: str, text: str, compare: str,
              *flat: Any) -> Iterator[Updates]:
        """The text box's changes: each is drawn; the history keeps only what stayed. A session's first run is the
        page's own text (a link's or the default, set when the page loads), not a keystroke: it stays, and the
        first edit is diffed against it however soon it follows."""
        yield from measured(request, s, model, text, compare, values_for(model, list(flat)), keyed=s.last is not None)

    def again(request: gr.Request, s: Session, model: str, text: str, compare: str,
              *flat: Any) -> Iterator[Updates]:
        """*Measure again*: the same input, timed anew (never reused from another session)."""
        yield from measured(request, s, model, text, compare, values_for(model, list(flat)), fresh=True)

    def edit(request: gr.Request, s: Session, model: str, text: str, compare: str,
             config_json: str) -> Iterator[Updates]:
        """The Playground's run for an HTTP caller, in the caller's session (so /compile follows it): the model's
        config as one JSON object, as /inspect takes it, instead of every model's controls."""
        try:
            values = config_values(config_json)
        except USER_ERRORS as e:
            raise gr.Error(str(e), title="Cannot run this input", print_exception=False) from None
        yield from measured(request, s, model, text, compare, values)

    def compiled(s: Session, enabled: bool, backend: str, dynamic: str, mark: bool,
                 fullgraph: bool) -> Iterator[Updates]:
        """The compiled side: progress while the worker compiles, then the numbers; never blocks eager."""
        try:  # checked whether on or off: an HTTP caller's bad value is refused, not ignored
            if not isinstance(enabled, bool):
                raise InputError(f"enabled must be true or false; got {echoed(enabled)}")
            options = CompileOptions(backend, dynamic, mark, fullgraph)
        except InputError as e:
            raise gr.Error(str(e), title="Cannot compile", print_exception=False) from None
        if not enabled or s.last is None:  # no earlier run's compiled cards beside this run's eager ones
            yield {c.status: "Compiled execution is off: tick *compile* to compare with torch.compile.",
                   c.cards: cards_html([])}
            return
        yield {c.status: f"Compiling {s.last.arch}, {s.last.tokens} tokens…",
               c.cards: cards_html(pending_cards(s.last.arch, s.last.tokens))}

        def show(item: Any) -> Updates:
            return {session: s, c.status: item.status, c.cards: cards_html(item.cards), c.timeline: item.timeline,
                    c.breaks: item.breaks, c.figure: item.figure, c.fx_graph: item.graph, c.fx_code: item.code,
                    p.raw: item.report}

        items = compiled_update(s, compile_service(s.id), options)
        yield from streamed(items, show, c.status, "Cannot compile", kind=f"compile ({backend})")

    inputs = [session, p.model, p.text, p.compare, *p.controls]
    run_event = {"fn": run, "inputs": inputs, "outputs": p.outputs(session), "trigger_mode": "always_last",
                 "concurrency_id": Queue.MEASURE.value, "concurrency_limit": MEASURE_EVENTS, "show_progress": "minimal"}
    options = list(c.options.values())
    compiled_event = {"fn": compiled, "inputs": [session, *options], "outputs": p.compiled_outputs(session),
                      "concurrency_id": Queue.COMPILE.value, "concurrency_limit": 1, "show_progress": "hidden",
                      "trigger_mode": "always_last"}
    link_event = {"fn": state_link, "inputs": [p.model, p.text, *p.controls, *options], "outputs": link,
                  "queue": False, "api_visibility": "private", "show_progress": "hidden"}

    lines_event = wire_python_views(session, p.python, p.graph, p.open_module)
    wire_kernels(session, c.kernels)
    tab.select(**link_event)

    def after_run(event: Any) -> None:
        event.then(**lines_event)
        event.then(**link_event).then(api_visibility="private", **compiled_event)
        event.success(None, js=CLOSE_ERRORS)  # a refused value's toast goes once a value runs, not 10 s later

    # `.change` on the text boxes: typing, paste, cut, delete, undo, drag-and-drop, an example, a restored link
    # all change the value, and each settled value runs once (an unchanged input is not re-run: see `update`).
    after_run(p.text.change(api_visibility="private", **{**run_event, "fn": typed}))
    for left in (p.text.submit, p.text.blur):  # Enter or leaving the box: the typed input is meant, and stays
        left(Session.settle, session, None, queue=False, api_visibility="private", show_progress="hidden")
    after_run(p.again.click(api_visibility="private", **{**run_event, "fn": again}))
    p.compare.change(api_visibility="private", **run_event)
    # The HTTP API's /edit: an event of a box no one sees (so that it runs in the caller's session), with named
    # parameters: model, text, compare, config_json.
    config_json = gr.Textbox("{}", visible=False)
    config_json.change(api_name="edit", **{**run_event, "fn": edit, "inputs": [session, p.model, p.text, p.compare,
                                                                             config_json]})
    # A settled value of any control (a slider released or its box left/entered, not every keystroke): one event
    # for them all, not one per control: each event is a dependency the page's script walks at load, with its
    # chained ones (lines, link, compile) and its ~50 inputs, and one per control made most of the page's config
    # (bench/RESULTS-page-load.md).
    after_run(gr.on([e for ctl in p.controls for e in _settled_events(ctl)], api_visibility="private", **run_event))
    after_run(p.model.input(refusing(p.show_model), inputs=p.model, outputs=p.model_choice(), api_name="select_model",
                            queue=False).then(api_visibility="private", **run_event))
    p.example.input(refusing(_example), inputs=p.example, outputs=p.text, api_name="example", queue=False)
    p.open_module.input(_open_module, inputs=[session, p.open_module], outputs=p.graph, api_visibility="private",
                        show_progress="hidden")
    for i, option in enumerate(options):
        option.input(**link_event)  # at once: a link copied while the compile runs carries the options
        option.input(api_name="compile" if i == 0 else None, api_visibility="public" if i == 0 else "private",
                     **compiled_event)
    # Queued (not queue=False) so that a bad link's warning reaches the page.
    def restored(request: gr.Request) -> Updates:
        return restore(p, request)

    linked.change(restored, None, p.restored(), api_name="load", concurrency_limit=None, show_progress="hidden")


# Gradio's error toasts' close buttons (gradio 6: `.toast-close.error`), clicked as a person would.
CLOSE_ERRORS = "() => document.querySelectorAll('.toast-close.error').forEach((b) => b.click())"


def _settled_events(control: gr.components.Component) -> list[Any]:
    """The events that mean "this value is chosen": a slider's release (mouse up, or leaving its number box,
    which Enter does too: see theme.PAGE_JS; `.input` would fire for every prefix typed), a number box's blur, a
    click on anything else."""
    if isinstance(control, gr.Slider):
        return [control.release]
    if isinstance(control, gr.Number):
        return [control.blur]
    return [control.input]


def _example(example: str) -> str:
    """The text of one of the examples (`/example`)."""
    if not isinstance(example, str) or example not in EXAMPLES:
        raise InputError(f"unknown example {echoed(example)}; examples are: {', '.join(EXAMPLES)}")
    return EXAMPLES[example]


def _open_module(session: Session, module: str) -> Any:
    """Redraw the latest graph with one module's nodes drawn one by one (the counts stay those of the whole graph)."""
    figure = opened_graph(session, module or "")
    return gr.skip() if figure is None else figure


def state_link(model: str, text: str, *rest: Any) -> str:
    """An anchor to this exact state (relative: the browser resolves it against this page's address)."""
    *flat, compile_on, backend, dynamic, mark, fullgraph = rest
    try:
        state = LinkState(model, config_dict(SOURCES[model].config(values_for(model, flat))), text or "",
                          bool(compile_on), backend, dynamic, bool(mark), bool(fullgraph))
        query = state.query()
    except (*USER_ERRORS, KeyError):
        return ""
    return (f'<a href="{html.escape(query)}" target="_blank" title="copy this link to hand out exactly this '
            'example">🔗 link to this state</a>')


def restore(p: Playground, request: gr.Request) -> Updates:
    """Apply a state link (URL query parameters), or the default text: setting the (initially empty) input runs
    the Playground once, through its change event. A bad link is said, and the defaults open."""
    try:
        # the lessons, a room, the Code tab, presentation mode and Gradio's page read their own parameters
        state = read_link({k: v for k, v in request.query_params.items() if k not in PAGE_PARAMS})
    except USER_ERRORS as e:
        gr.Warning(f"This link could not be restored: {e}. The defaults are shown instead.")
        return {p.text: DEFAULT_TEXT}
    if state is None:
        return {p.text: DEFAULT_TEXT}
    by_knob = {(m, k.name): ctl for (m, k), ctl in zip(control_specs(), p.controls, strict=True)}
    o = p.compiled.options
    return {**p.show_model(state.model), p.text: state.text or DEFAULT_TEXT,
            **{by_knob[(state.model, name)]: value for name, value in state.config.items()},
            o["compile_on"]: state.compile, o["backend"]: state.backend, o["dynamic"]: state.dynamic,
            o["mark"]: state.mark_dynamic, o["fullgraph"]: state.fullgraph}
