"""The page's header (presentation mode, the state link) and its two folded panels: the session's downloads and
the server's limits."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import gradio as gr

from explorer.artefacts.perfetto import latest_run_job
from explorer.artefacts.tlparse import replay_job
from explorer.core import limits
from explorer.core.errors import InputError
from explorer.core.queues import Queue
from explorer.runs.session import Session
from explorer.server import EXPORTS
from explorer.serving.placement import compile_service
from explorer.ui.downloads import PREFIX
from explorer.ui.endpoints import refusing
from explorer.ui.theme import STATE_LINK_ID
from explorer.views.export import perfetto_file, tlparse_files


def header() -> tuple[gr.Checkbox, gr.HTML]:
    with gr.Row(equal_height=True):
        with gr.Column(scale=4):
            gr.Markdown("# Graph Explorer")
            gr.Markdown(
                "PyTorch builds the autograd graph **while your program runs** (define-by-run). Type any text "
                "and change the architecture: the graph below is the real one of that exact run, with its "
                "measured eager latency and memory.", elem_classes="ge-aside")
        with gr.Column(scale=2, min_width=420), gr.Row(equal_height=True):  # side by side: one line of the screen
            present = gr.Checkbox(False, label="presentation mode", info="larger everything, for a projector")
            link = gr.HTML(label="link to this state", elem_id=STATE_LINK_ID)
    return present, link


def downloads_panel(session: gr.State) -> None:
    with gr.Accordion("Download this session", open=False):
        gr.Markdown("Your measurements as CSV (one row per run, with the spread), a self-contained HTML "
                    "report (figures inline, the configs, the machine): it opens offline; and, for a zoo model or a "
                    "library architecture, **the latest run as code**: a Python script (`.py`) and a Jupyter "
                    "notebook (`.ipynb`) that rebuild the model with its config and seed (its source inside: only "
                    "torch needed, and transformers for a library architecture), run your text and print the "
                    "graph's size and the timings beside the app's.",
                    elem_classes="explain")
        export_btn = gr.Button("Prepare CSV, HTML report, script and notebook")
        gr.Markdown("**A profile for Perfetto**: torch.profiler over one eager forward, one train step and (if you "
                    "compiled it) one compiled forward of the latest run, shapes and your model's Python lines "
                    "recorded, as gzip'd Chrome-trace JSON: open it at ui.perfetto.dev (or chrome://tracing).",
                    elem_classes="explain")
        trace_btn = gr.Button("Profile the latest run for Perfetto")
        gr.Markdown("**The compile, for tlparse**: this session's compiled inputs replayed in a fresh compile "
                    "worker with `TORCH_TRACE`, and the HTML report `tlparse` builds from the log (each compile id "
                    "with its guards, graph breaks, FX/AOT/inductor graphs and generated code), zipped with the "
                    "log: open `report/index.html`, or attach the zip to a PyTorch issue.",
                    elem_classes="explain")
        report_btn = gr.Button("Compile report for tlparse (zip)")
        report_links = gr.HTML()
        downloads = gr.File(label="downloads", file_count="multiple", interactive=False)
    export_btn.click(lambda s: EXPORTS.write(s), session, downloads, api_visibility="private",
                     concurrency_id=Queue.EXPORT.value, concurrency_limit=2)

    # Each of the two: whether it can run is said at once, beside its button (not as an error on the downloads
    # after the compile queue's wait); what it makes joins the files already prepared instead of replacing them.
    def perfetto(s: Session, kept: list[str] | None) -> Any:
        if refused(latest_run_job, s):
            return gr.skip()
        return [*(kept or []), perfetto_file(EXPORTS, s, compile_service(s.id))]

    trace_btn.click(lambda s: said_now(latest_run_job, s, "Profiling the latest run…"), session, report_links,
                    queue=False, api_visibility="private").then(
        refusing(perfetto), [session, downloads], downloads, api_visibility="private",
        concurrency_id=Queue.COMPILE.value)

    def compile_report(s: Session, kept: list[str] | None) -> tuple[Any, Any]:
        if refused(replay_job, s):
            return gr.skip(), gr.skip()
        files = tlparse_files(EXPORTS, s)
        rows = "".join(
            f"<li><code>[{html.escape(cid)}]</code> at {length} tokens: {html.escape(reason)}: "
            + (f'<a href="{PREFIX}{html.escape(page)}" target="_blank">its entry in the report</a>' if page else
               "not in the replayed report")
            + "</li>" for cid, length, reason, page in files.rows)
        return [*(kept or []), files.zip], f"<p>The compile timeline's rows in tlparse's report:</p><ul>{rows}</ul>"

    report_btn.click(lambda s: said_now(replay_job, s, "Replaying this session's compiles for tlparse…"), session,
                     report_links, queue=False, api_visibility="private").then(
        refusing(compile_report), [session, downloads], [downloads, report_links], api_visibility="private",
        concurrency_id=Queue.COMPILE.value)


def refused(check: Callable[[Session], Any], s: Session) -> str | None:
    """Why `check` (a job's maker, which refuses before any work) refuses this session, or None."""
    try:
        check(s)
    except InputError as e:
        return str(e)
    return None


def said_now(check: Callable[[Session], Any], s: Session, starting: str) -> str:
    """Beside the button, at once: what starts, or why it cannot yet (nothing else changes)."""
    why = refused(check, s)
    return f"<p>{html.escape(starting if why is None else 'Not yet: ' + why)}</p>"


def limits_panel() -> None:
    with gr.Accordion("Limits of this server", open=False):
        gr.Markdown("What this server refuses or cuts, so that one request cannot take it down for everyone. "
                    "Running it yourself? Raise any of them with its environment variable.")
        gr.Dataframe(limits.table(), headers=["variable", "in force", "what it limits"], interactive=False,
                     wrap=True)
