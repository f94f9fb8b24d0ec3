"""The compiled side's kernels: where the compiled forward's time went, kernel by kernel, each traced to the FX
nodes it computes (profiled on request, in a worker of its own). Layout and wiring only: the view is
explorer/views/kernels.py."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import gradio as gr

from explorer.api import workers
from explorer.core.queues import Queue
from explorer.runs.session import Session
from explorer.ui.stream import Updates, streamed
from explorer.views.kernels import KERNEL_COLUMNS, kernels_update


@dataclass
class KernelsPanel:
    profile: gr.Button
    said: gr.Markdown
    graph: gr.Plot
    table: gr.Dataframe


def kernels_panel() -> KernelsPanel:
    with gr.Accordion("Where the compiled time went: inductor's kernels, each traced to the FX nodes it computes",
                      open=False):
        profile = gr.Button("Profile the compiled kernels", size="sm", variant="secondary")
        said = gr.Markdown()
        graph = gr.Plot(label="the captured graph coloured by each node's share of its kernels' time")
        table = gr.Dataframe(headers=KERNEL_COLUMNS, label="the kernels, costliest first", interactive=False,
                             wrap=True, max_height=360)
    return KernelsPanel(profile, said, graph, table)


def wire_kernels(session: gr.State, k: KernelsPanel) -> None:
    def profiled(s: Session) -> Iterator[Updates]:
        items = kernels_update(s, workers(s.id))
        yield from streamed(items, lambda v: {k.said: v.said, k.graph: v.graph, k.table: v.rows}, k.said,
                            "Cannot profile the compiled kernels", kind="kernels")

    # a compile of its own, in a worker of its own: it waits behind the session's compiles, never beside them
    k.profile.click(profiled, session, [k.said, k.graph, k.table], api_visibility="private",
                    concurrency_id=Queue.COMPILE.value, concurrency_limit=1, show_progress="hidden")
