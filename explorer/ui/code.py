"""The Code tab (only where the operator allows code: explorer/code/allowed.py): the Playground's model's Python in
an editor; an edit runs after a pause in typing (PAUSE_MS), or at once on Ctrl+Enter or its button, built and run
in the code worker on the Playground's input, its graph diffed against the previous code's."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import gradio as gr

from explorer.code.debug import debug_edit
from explorer.code.edits import CodeEdits
from explorer.code.patch import applied, encoded
from explorer.code.shapes import EDIT_LENGTHS, shapes_edit
from explorer.compile.jobs import PlaygroundJob
from explorer.compile.options import CompileOptions
from explorer.core.confine import offered
from explorer.core.errors import USER_ERRORS
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.inputs import tokenize
from explorer.eager.costs import Costs
from explorer.labs.contract import Output
from explorer.labs.debug import OUTPUTS as DEBUG_OUTPUTS
from explorer.labs.debug import DebugResult
from explorer.labs.debug import view_of as debug_view
from explorer.labs.deploy import DEFAULT_LENGTHS, DeployOutcome, DeployResult, run_deploy
from explorer.labs.deploy import OUTPUTS as DEPLOY_OUTPUTS
from explorer.labs.deploy import view_of as deploy_view
from explorer.labs.shapes import OUTPUTS as SHAPES_OUTPUTS
from explorer.labs.shapes import ShapesResult
from explorer.labs.shapes import view_of as shapes_view
from explorer.runs.session import Session
from explorer.server import CODE_WORKER
from explorer.ui.controls import cards_html
from explorer.ui.labs import output_component
from explorer.ui.stream import Updates, streamed
from explorer.ui.theme import CODE_EDITOR_ID, CODE_ERROR_ID, CODE_RUN_ID
from explorer.views.code import code_view, compiled_text, heat_figure
from explorer.views.costs import LINE_COLUMNS, NODE_COLUMNS, costs_summary, line_rows, top_rows
from explorer.views.lines import BRANCH_COLUMNS, LINES_COLUMNS
from models import arch_label, make_config
from models.bugs import BUGS
from models.config import config_dict

FROZEN_ROUTES = ("jit.trace", "export", "onnx")  # the three a lesson compares: a trace, a program, a file
PAUSE_MS = 700  # typing that stops this long runs the edit: longer than a typist's gap between keys
PAUSED_JS = f"""() => {{
  clearTimeout(window.geCodePause);
  window.geCodePause = setTimeout(() => document.getElementById('{CODE_RUN_ID}')?.click(), {PAUSE_MS});
}}"""


def code_tab(asked: gr.Textbox, tabs: gr.Tabs, tab: gr.Tab, session: gr.State) -> None:
    """The tab's editor, buttons and view, wired; opening `tab` loads the Playground's model's file, and a link's
    edit (`?code=`, read when the page's address asks something: `asked`, explorer/ui/address.py) opens it in
    `tabs`."""
    gr.Markdown("The Playground's model as Python. Edit its `forward` (add an `if` on the data, a second loop, a "
                "skip connection) and pause, or press Ctrl+Enter: the edited file is rebuilt with the Playground's "
                "knobs and seed, in a separate walled-in process, and run on the Playground's input; the graph shows "
                "what your code built, outlined in red where it grew against the previous code's. A broken edit is "
                "said at its line and the last good graph stays. Below: compile it, freeze it for deployment, or "
                "inject a bug into it.", elem_classes="explain")
    gr.Markdown(offered().said(), elem_classes="ge-walls")  # what this machine's kernel puts around the edit
    edits = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1):
            editor = gr.Code(language="python", label="the model's file (edit it: the graph follows)", lines=28,
                             interactive=True, elem_id=CODE_EDITOR_ID)
            with gr.Row():
                run_now = gr.Button("Run it now (Ctrl+Enter)", elem_id=CODE_RUN_ID, scale=0, min_width=180,
                                    variant="primary")
                undo = gr.Button("Undo the last edit that ran", scale=0, min_width=220)
                back = gr.Button("Back to the original", scale=0, min_width=200)
            link = gr.HTML()  # to this edit: the changed lines, in the address
            broke = gr.HTML(elem_id=CODE_ERROR_ID)  # the line the page marks in the editor (ui/theme.PAGE_JS)
        with gr.Column(scale=1):
            status = gr.Markdown()
            cards = gr.HTML()
            figure = gr.Plot(label="autograd graph of the edited code")
            diff = gr.Textbox(label="against the previous code, per module", lines=5, interactive=False)
    with gr.Accordion("Lines that ran, and which way each branch went, in the code on screen", open=False):
        lines = gr.Dataframe(headers=LINES_COLUMNS, label="its lines that ran (<editor>: the edit)", interactive=False,
                             wrap=True, max_height=360, column_widths=["24%", "8%", "8%", "60%"])
        branches = gr.Dataframe(headers=BRANCH_COLUMNS[:3], label="which way each if, for and while went",
                                interactive=False, wrap=True, max_height=300)
    with gr.Row():
        compile_it = gr.Button("Compile the last edit that ran (aot_eager, in the code worker)", scale=0,
                               min_width=300)
        freeze = gr.Button("Freeze it by jit.trace, torch.export and ONNX (the deployment lab's routes)", scale=0,
                           min_width=300)
        bug = gr.Dropdown([(b.title, b.name) for b in BUGS.values()], value="shape", label="bug", scale=0,
                          min_width=220)
        debug = gr.Button("Inject the bug (the debugging lab, without inductor)", scale=0, min_width=300)
    with gr.Row():
        lengths = gr.Textbox(EDIT_LENGTHS, label="lengths (tokens): predicted from the edit's guards, then run",
                             scale=1)
        unbacked = gr.Checkbox(False, label="mark the length unbacked (a torch._check in the edit can bound it)",
                               scale=0, min_width=260)
        shapes = gr.Button("Will they recompile? (the shapes lab on the edit, in the code worker)", scale=0,
                           min_width=300)
    with gr.Row():
        profile_it = gr.Button("Where the time went (the profiler on the edit's train step, in the code worker)",
                               scale=0, min_width=300)
    profiled = gr.Markdown()
    with gr.Row():
        cost_lines = gr.Dataframe(headers=LINE_COLUMNS, label="the edit's train step, per line", interactive=False,
                                  wrap=True, max_height=300)
        cost_nodes = gr.Dataframe(headers=NODE_COLUMNS, label="its costliest nodes", interactive=False, wrap=True,
                                  max_height=300)
    shaped = gr.Markdown()
    shaped_lengths = output_component(replace(_declared(SHAPES_OUTPUTS, "lengths"), label="per length, on the edit"))
    shaped_symbols = output_component(replace(_declared(SHAPES_OUTPUTS, "symbols"),
                                              label="what each dimension became, on the edit"))
    compiled = gr.Markdown()
    frozen = gr.Markdown()
    routes = output_component(replace(_declared(DEPLOY_OUTPUTS, "table"), label="per route, on the edited model"))
    debugged = gr.Markdown()
    modes = output_component(replace(_declared(DEBUG_OUTPUTS, "modes"), label="per mode, on the edited model"))

    def opened(s: Session, e: CodeEdits | None) -> Updates:
        """The tab opened: the Playground's model's file, unless its edits are already here."""
        if e is not None and e.model == s.model_name:
            return {edits: e}
        try:
            e = CodeEdits.of(s.model_name)
        except USER_ERRORS as err:
            return {edits: None, editor: "", status: f"**{err}**"}
        return {edits: e, editor: e.original}  # the editor's change runs it: the graph to diff against

    def ran(s: Session, e: CodeEdits | None, source: str) -> Iterator[Updates]:
        ours = e is not None and s.model_name == e.model
        text = s.last.input.text if s.last is not None and ours else DEFAULT_TEXT
        if e is None or not source.strip() or e.on_screen(source, text):
            # nothing to run: every output left as it is (an empty dict is one value to Gradio, not "no change":
            # it logged "didn't return enough output values" at each page load; no output would clear them)
            yield {status: gr.skip()}
            return
        arch = arch_label(s.model_name, s.config) if ours else e.model
        items = e.run(source, _knobs(s, e), text, CODE_WORKER)

        def show(o: Any) -> Updates:
            if o.run is not None:
                s.labs["code"] = e.report(o)  # the session's report includes it
            v = code_view(o, arch)
            marked = f'<span data-line="{v.error_line}"></span>' if v.error_line else ""
            shown = {status: v.status, cards: cards_html(v.cards), figure: v.figure, diff: v.diff, broke: marked,
                     lines: v.lines, branches: [r[:3] for r in v.branches]}
            return shown | ({link: _link(e, o.source)} if o.run is not None else {})
        yield from streamed(items, show, status, "Cannot run the edit", kind="code")

    def froze(s: Session, e: CodeEdits | None) -> Iterator[Updates]:
        """The deployment lab's routes on the last edit that ran, each built from it in the code worker."""
        if e is None or e.good is None or not e.kept:
            yield {frozen: "Run an edit first: the routes freeze the last edit that ran."}
            return
        items = run_deploy(CODE_WORKER, e.model, make_config(e.model, _knobs(s, e)), e.text, list(DEFAULT_LENGTHS),
                           list(FROZEN_ROUTES), "", e.kept[-1])
        capture = e.good.fixed.capture

        def show(result: DeployResult) -> Updates:
            v = deploy_view(DeployOutcome(result, capture))
            return {frozen: f"{v.status}\n\n{v.verdict}", routes: v.table}
        yield from streamed(items, show, frozen, "Cannot freeze the edit", kind="code deploy")

    def debugged_it(s: Session, e: CodeEdits | None, name: str) -> Iterator[Updates]:
        """The debugging lab on the last edit that ran, with `name`'s bug injected, whole in the code worker."""
        if e is None or e.good is None or not e.kept:
            yield {debugged: "Run an edit first: the bug goes into the last edit that ran."}
            return
        items = debug_edit(CODE_WORKER, e.model, _knobs(s, e), name, e.text, e.kept[-1])

        def show(result: DebugResult) -> Updates:
            v = debug_view(result)
            return {debugged: f"{v.status}\n\n{v.verdict}", modes: v.modes}
        yield from streamed(items, show, debugged, "Cannot debug the edit", kind="code debug")

    def shaped_it(s: Session, e: CodeEdits | None, typed: str, marked: bool) -> Iterator[Updates]:
        """The shapes lab on the last edit that ran: the typed lengths predicted from its guards, then run."""
        if e is None or e.good is None or not e.kept:
            yield {shaped: "Run an edit first: the lengths are predicted on the last edit that ran."}
            return
        items = shapes_edit(CODE_WORKER, e.model, _knobs(s, e), e.kept[-1], typed, marked)

        def show(result: ShapesResult) -> Updates:
            v = shapes_view(result)
            return {shaped: f"{v.status}\n\n{v.summary}", shaped_lengths: v.lengths, shaped_symbols: v.symbols}
        yield from streamed(items, show, shaped, "Cannot predict on the edit", kind="code shapes")

    def profiled_edit(e: CodeEdits | None) -> Iterator[Updates]:
        """The last edit that ran, its train step profiled in the code worker, each operator charged to its node and
        each node to its line of the edit."""
        if e is None or e.good is None or e.good.lines is None:
            yield {profiled: "Run an edit first: the profiler takes the last edit that ran."}
            return
        run = e.good

        def items() -> Iterator[Any]:
            yield (yield from e.costs(CODE_WORKER))

        def show(costs: Costs) -> Updates:
            assert run.lines is not None
            return {profiled: costs_summary(costs, None), cost_lines: line_rows(costs, run.lines),
                    cost_nodes: top_rows(costs, run.fixed.capture.graph, run.lines),
                    figure: heat_figure(run, costs, e.model)}
        yield from streamed(items(), show, profiled, "Cannot profile the edit", kind="code costs")

    def compiled_it(s: Session, e: CodeEdits | None) -> Iterator[Updates]:
        """The last edit that ran through torch.compile (aot_eager: inductor would start a C++ compiler, a process
        the code worker refuses), once, on the same input: its graphs, where dynamo broke them, and eager against
        compiled."""
        if e is None or e.good is None or not e.kept:
            yield {compiled: "Run an edit first: the compile takes the last edit that ran."}
            return
        ids = [list(tokenize(e.text).ids[0].tolist())]
        job = PlaygroundJob("code tab", e.model, _knobs(s, e), CompileOptions("aot_eager", "auto", False, False), [],
                            ids, e.kept[-1])
        yield from streamed(CODE_WORKER.run(job), lambda reply: {compiled: compiled_text(reply)}, compiled,
                            "Cannot compile the edit", kind="code compile")

    def undone(e: CodeEdits | None, editing: str) -> Any:
        return gr.skip() if e is None else e.undo(editing)

    def original(e: CodeEdits | None) -> Any:
        return gr.skip() if e is None else e.original

    shown = [status, cards, figure, diff, link, broke, lines, branches]
    running = {"concurrency_id": "code", "concurrency_limit": 1, "show_progress": "hidden",
               "api_visibility": "private"}
    editor.input(None, js=PAUSED_JS)  # typed or pasted (not set by a button): runs once the typing pauses
    run_now.click(ran, [session, edits, editor], shown, trigger_mode="always_last", **running)
    debug.click(debugged_it, [session, edits, bug], [debugged, modes], **running)
    freeze.click(froze, [session, edits], [frozen, routes], **running)
    compile_it.click(compiled_it, [session, edits], compiled, **running)
    profile_it.click(profiled_edit, edits, [profiled, cost_lines, cost_nodes, figure], **running)
    shapes.click(shaped_it, [session, edits, lengths, unbacked], [shaped, shaped_lengths, shaped_symbols], **running)
    set_by_the_app = [undo.click(undone, [edits, editor], editor, queue=False, api_visibility="private"),
                      back.click(original, edits, editor, queue=False, api_visibility="private"),
                      tab.select(opened, [session, edits], [edits, editor, status], queue=False,
                                 api_visibility="private")]

    def linked(request: gr.Request) -> Updates:
        """`?model=...&code=...` opens this tab with that edit (a bad or outdated one is said; the file as shipped
        opens)."""
        token = request.query_params.get("code")
        if token is None:
            return {tabs: gr.skip()}
        try:
            e = CodeEdits.of(request.query_params.get("model", "rnn"))
        except USER_ERRORS as err:
            gr.Warning(f"This link's edit could not be opened: {err}.")
            return {tabs: gr.skip()}
        try:
            source = applied(e.original, token)
        except USER_ERRORS as err:
            gr.Warning(f"This link's edit could not be opened: {err}.")
            source = e.original
        return {tabs: gr.Tabs(selected=tab.id), edits: e, editor: source}
    set_by_the_app.append(asked.change(linked, None, [tabs, edits, editor], api_visibility="private",
                                       concurrency_limit=None, show_progress="hidden"))  # queued: a warning shows
    for event in set_by_the_app:  # the editor's text set by the app, not typed: run it (an unchanged one is not)
        event.then(ran, [session, edits, editor], shown, **running)


def _declared(outputs: tuple[Output, ...], name: str) -> Output:
    """A lab's declared output, for the same component here."""
    return next(o for o in outputs if o.name == name)


def _knobs(s: Session, e: CodeEdits) -> dict[str, Any]:
    """The Playground's knobs when it shows the edited model; its defaults otherwise (a link's edit may open before
    the Playground has switched model)."""
    return config_dict(s.config) if s.model_name == e.model else {}


def _link(e: CodeEdits, source: str) -> str:
    """An anchor to this edit (relative: the browser resolves it against this page), or why there is none."""
    if source == e.original:
        return ""
    token = encoded(e.original, source)
    if token is None:
        return "<small>This edit changes too much for a link: copy the file from the editor.</small>"
    query = html.escape(f"?model={e.model}&code={token}")
    return f'<a href="{query}" target="_blank" title="the changed lines, in the address">🔗 link to this edit</a>'
