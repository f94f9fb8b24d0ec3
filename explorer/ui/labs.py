"""A lab's tab, made from its spec: its intro, one control per parameter, its button, and one output per entry of
the spec's `outputs` (plus the status line and the raw report); its run streamed through `stream.streamed`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer.api import run_lab, workers
from explorer.core.examples import DEFAULT_TEXT
from explorer.core.fmt import count
from explorer.core.inputs import tokenize
from explorer.labs.contract import Kind, LabContext, LabSpec, Needs, Output
from explorer.labs.registry import LABS
from explorer.runs.session import Session
from explorer.server import EXPORTS, RESIDENCY, concurrency
from explorer.sources.contract import Subject
from explorer.sources.registry import SOURCES, source
from explorer.ui.controls import control
from explorer.ui.stream import Updates, streamed

OWNERS: dict[str, str] = {}  # a server-wide lab's run (its own worker) -> the page that started it
PROSE_WIDTH = "320px"  # a table's sentence column: about 40 characters a line


def output_component(o: Output) -> gr.components.Component:
    """The component that shows one declared output (a lab's, or one the Code tab borrows)."""
    if o.kind is Kind.MARKDOWN:
        return gr.Markdown(label=o.label or None)
    if o.kind is Kind.TABLE:
        # a sentence wraps in its column; left to size itself, its column pushed the figures out of view
        widths = [PROSE_WIDTH if c in o.prose else "auto" for c in o.columns] if o.prose else None
        return gr.Dataframe(headers=list(o.columns), label=o.label, interactive=False, wrap=True,
                            column_widths=widths)
    if o.kind is Kind.PLOT:
        return gr.Plot(label=o.label)
    if o.kind is Kind.CODE:
        return gr.Code(language="python", label=o.label, max_lines=30)
    return gr.File(label=o.label, file_count="multiple", interactive=False)


def _outputs(outputs: tuple[Output, ...]) -> dict[str, gr.components.Component]:
    """Each output's component, in order; those sharing a row side by side, folded ones in an accordion."""
    made: dict[str, gr.components.Component] = {}
    i = 0
    while i < len(outputs):
        o = outputs[i]
        if o.row:
            group = [x for x in outputs[i:] if x.row == o.row]
            with gr.Row():
                made |= {x.name: output_component(x) for x in group}
            i += len(group)
            continue
        if o.folded:
            with gr.Accordion(o.label, open=False):
                made[o.name] = gr.Markdown()
        else:
            made[o.name] = output_component(o)
        i += 1
    return made


def playground_subject(session: Session, needs: Needs) -> Subject | None:
    """The model a lab takes from the Playground: the run on screen (model, architecture, text: its latest graph,
    timed or not, not the latest timed run) or its current model."""
    if needs is Needs.MODEL:
        return Subject(source(session.model_name), session.config, playground=True)
    r = session.shown
    return None if r is None else Subject(source(r.model), r.config, r.input.text, playground=True)


def subject_line(subject: Subject | None, needs: Needs) -> str:
    """What a lab ran on, said above its results: the Playground's architecture in full (and the input's length);
    nothing for a lab that may run a model of its own."""
    if subject is None or needs is Needs.ANY_MODEL:
        return ""
    if needs is Needs.MODEL:
        return f"On the Playground's model: **{subject.arch}**.\n\n"
    return f"On the Playground's run: **{subject.arch}**, {count(tokenize(subject.text).tokens, 'token')}.\n\n"


def fit_notice(spec: LabSpec, s: Session) -> str:
    """Before any click: why the lab cannot run on the Playground's model, and the models it runs ("" if it can)."""
    if spec.refuses is None:
        return ""
    subject = playground_subject(s, spec.needs) or Subject(source(s.model_name), s.config, playground=True)
    reason = spec.refuses(subject)
    if not reason:
        return ""
    runs = [name for name, src in SOURCES.items() if not spec.refuses(Subject(src, src.config(), playground=True))]
    return (f"**This lab cannot run on the Playground's {subject.arch}**: {reason}. It runs on "
            f"{', '.join(runs) or 'none of the models here'}: pick one in the Playground.")


@dataclass
class LabPanel:
    """A lab's controls and outputs, and the last view shown (for a handler that redraws part of it)."""

    controls: dict[str, gr.components.Component]
    outputs: dict[str, gr.components.Component]
    last: gr.State


def lab_tab(spec: LabSpec, session: gr.State, only: tuple[str, ...] | None = None,
            playground_text: bool = False, tab: gr.Tab | None = None) -> LabPanel:
    """The lab's intro, controls, button and outputs; `only` these knobs as controls (the others at their
    defaults), and with `playground_text` the text of the Playground's latest run (a panel inside the Playground).
    Opening its `tab` says at once whether it can run on the Playground's model."""
    if only is None:
        gr.Markdown(spec.intro)
    if tab is not None:
        fit = gr.Markdown()
        tab.select(lambda s: fit_notice(spec, s), session, fit, queue=False, api_visibility="private")
    knobs = [k for k in spec.shown() if only is None or k.name in only]
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            go = gr.Button(spec.button, variant="primary")  # above its controls: a long list hid it below the fold
            controls = {k.name: control(k) for k in knobs}
        with gr.Column(scale=3):
            status = gr.Markdown()
            shown = _outputs(spec.outputs)
            raw = gr.JSON(label=f"raw numbers (the same report as `python -m explorer {spec.name} --json`)",
                          open=False)
    last = gr.State(None)

    def show(s: Session, view: Any, header: str) -> Updates:
        before = s.labs.get(spec.name)
        changed = spec.against(before, view.report) if spec.against is not None and before is not None else ""
        s.labs[spec.name] = view.report  # the session's report includes it
        return {status: header + view.status + (f"\n\n{changed}" if changed else ""), raw: view.report, last: view,
                **{c: getattr(view, name) for name, c in shown.items()}}

    def run(request: gr.Request, s: Session, *values: Any) -> Iterator[Updates]:
        RESIDENCY.attach(request.session_hash, s)
        if spec.worker is not None:  # its own worker, server-wide: closing the page cancels its run
            OWNERS[spec.name] = request.session_hash
        try:
            subject = playground_subject(s, spec.needs)
            chosen = dict(zip(controls, values, strict=True))
            if playground_text:
                chosen["text"] = subject.text if subject is not None and subject.text else DEFAULT_TEXT
            items = run_lab(spec, subject, chosen, LabContext(workers(s.id), EXPORTS.job_dir))
            header = subject_line(subject, spec.needs)
            # the last run's results go first: a failure said under them read as if they were this run's
            yield {raw: None, last: None, **{c: None for c in shown.values()}}
            yield from streamed(items, lambda view: show(s, view, header), status,
                                f"Cannot run the {spec.title.lower()}", kind=spec.name)
        finally:
            OWNERS.pop(spec.name, None)

    go.click(run, [session, *controls.values()], [status, raw, last, *shown.values()], api_visibility="private",
             concurrency_id=spec.waits_in, concurrency_limit=concurrency(spec.waits_in),
             show_progress="hidden")  # the status line says what runs, every second
    return LabPanel(controls, shown, last)


def cancel_runs_of(page: str) -> None:
    """The page closed: stop the server-wide labs' runs it started (their processes are reaped with the worker)."""
    for name, owner in list(OWNERS.items()):
        if owner == page:
            LABS[name].runner(workers()).cancel()
