"""The Playground's views of the model's Python: the lines that ran and which way each branch went (recorded while
their box is open, after each run), and where the train step's time went (profiled on request). Layout and wiring
only: the views are explorer/views/lines.py and explorer/views/costs.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd
from pandas.io.formats.style import Styler

from explorer.core.errors import USER_ERRORS
from explorer.core.queues import Queue
from explorer.runs.session import Session
from explorer.server import MEASURE_EVENTS
from explorer.ui.stream import Updates
from explorer.ui.theme import NODE_PICK_ID
from explorer.views.costs import LINE_COLUMNS, NODE_COLUMNS, ROLLUP_COLUMNS, TOP
from explorer.views.lines import BRANCH_COLUMNS, LINES_COLUMNS
from explorer.views.playground import PickedNode, costs_view, lines_view, lit_graph, node_picked


@dataclass
class PythonViews:
    box: gr.Accordion  # the lines that ran
    shown: gr.State  # whether that box is open: only then does a run record its lines (a pass of its own)
    said: gr.Markdown
    picked: gr.Markdown  # the node clicked in the graph, and the line that made it
    node: gr.Textbox  # hidden: the node a click on the graph names (ui/theme.PAGE_JS writes it)
    pick: gr.Button  # hidden: pressed by the page after it wrote the node (a script's input event on a hidden box
    # updates its value but starts no event of Gradio's; a button's click does)
    table: gr.Dataframe
    branches: gr.Dataframe
    profile: gr.Button  # where the time went
    costs_said: gr.Markdown
    costs_graph: gr.Plot
    top: gr.Dataframe
    modules: gr.Dataframe
    per_line: gr.Dataframe


def python_views() -> PythonViews:
    # outside the box: a closed accordion's children are not on the page, and the click must reach it closed
    node = gr.Textbox(visible="hidden", elem_id=NODE_PICK_ID, label="the node clicked in the graph")
    pick = gr.Button("show the clicked node's line", visible="hidden", elem_id=f"{NODE_PICK_ID}-go")
    with gr.Accordion("Lines that ran: the model's Python for this input, and the nodes each line made",
                      open=False) as box:
        said = gr.Markdown()
        picked = gr.Markdown()
        table = gr.Dataframe(headers=LINES_COLUMNS, label="the model's lines that ran (pick one: its nodes are "
                             "ringed in the graph; click a node in the graph: its line is marked here)",
                             interactive=False, wrap=True, max_height=420,
                             column_widths=["24%", "8%", "8%", "60%"])
        branches = gr.Dataframe(headers=BRANCH_COLUMNS, label="which way each if, for and while went: this input, "
                                "and this session's earlier inputs on this architecture", interactive=False,
                                wrap=True, max_height=360, column_widths=["20%", "34%", "20%", "26%"])
    with gr.Accordion("Where the time went: the train step profiled node by node", open=False):
        profile = gr.Button("Profile this input", size="sm", variant="secondary")
        costs_said = gr.Markdown()
        costs_graph = gr.Plot(label="the graph coloured by each node's time")
        per_line = gr.Dataframe(headers=LINE_COLUMNS, label="per line of the model's Python", interactive=False,
                                max_height=300)
        modules = gr.Dataframe(headers=ROLLUP_COLUMNS, label="per module", interactive=False, max_height=300)
        top = gr.Dataframe(headers=NODE_COLUMNS, label=f"the {TOP} costliest nodes", interactive=False, wrap=True)
    return PythonViews(box, gr.State(False), said, picked, node, pick, table, branches, profile, costs_said,
                       costs_graph, top, modules, per_line)


def wire_python_views(session: gr.State, v: PythonViews, graph: gr.Plot, open_module: gr.Dropdown) -> dict[str, Any]:
    """Their events; returns the event each Playground run is followed by (the lines of the new input)."""

    def lines_shown(s: Session, shown: bool, module: str, picked: PickedNode | None = None) -> Updates:
        """The lines of the run on screen, while the box is open (recorded once per input, never timed), the graph
        again with each node's line in its hover, and the node clicked in it, if it is this run's, with its line."""
        if not shown or s.shown is None:
            return {v.said: gr.skip(), v.picked: gr.skip(), v.table: gr.skip(), v.branches: gr.skip(),
                    graph: gr.skip()}
        try:
            said, rows, forks = lines_view(s)
            node = s.picked_shown()
            if picked is None and node is not None:  # a node clicked on this run's graph, before the box's refresh
                picked = node_picked(s, node, module or "")
            drawn = lit_graph(s, None, module or "") if picked is None or picked.graph is None else picked.graph
        except USER_ERRORS as e:
            return {v.said: f"The lines that ran could not be recorded: {e}", v.picked: "", v.table: [],
                    v.branches: [], graph: gr.skip()}
        return {v.said: said, v.picked: picked.said if picked else "", v.branches: forks, graph: drawn,
                v.table: rows if picked is None or picked.row is None else _marked(rows, picked.row)}

    def node_clicked(s: Session, module: str, clicked: str) -> Updates:
        """A node clicked in the graph: the box opened (its lines recorded if they were not), the line that made
        the node marked in the table, that line's nodes ringed."""
        try:
            picked = node_picked(s, int(clicked), module or "")
        except (*USER_ERRORS, ValueError) as e:
            return {v.picked: f"The node's line could not be found: {e}"}
        return {v.box: gr.Accordion(open=True), v.shown: True, **lines_shown(s, True, module, picked)}

    def line_picked(s: Session, module: str, picked: gr.SelectData) -> Any:
        s.picked = None  # a line picked in the table is what is ringed now, not the node clicked before
        try:
            return lit_graph(s, picked.index[0], module or "")
        except USER_ERRORS:
            return gr.skip()

    def profiled(s: Session) -> Updates:
        try:
            c = costs_view(s)
        except USER_ERRORS as e:
            return {v.costs_said: f"**Cannot profile this input**: {e}"}
        return {v.costs_said: c.said, v.costs_graph: c.graph, v.top: c.top, v.modules: c.modules,
                v.per_line: c.lines}

    # both take the server's core for a pass of their own: they wait their turn with the Playground's runs
    measuring = {"api_visibility": "private", "concurrency_id": Queue.MEASURE.value,
                 "concurrency_limit": MEASURE_EVENTS}
    lines_event = {"fn": lines_shown, "inputs": [session, v.shown, open_module],
                   "outputs": [v.said, v.picked, v.table, v.branches, graph], "show_progress": "hidden", **measuring}
    v.box.expand(lambda: True, None, v.shown, queue=False, api_visibility="private").then(**lines_event)
    v.box.collapse(lambda: False, None, v.shown, queue=False, api_visibility="private")
    v.table.select(line_picked, [session, open_module], graph, api_visibility="private", show_progress="hidden")
    v.pick.click(node_clicked, [session, open_module, v.node],
                 [v.box, v.shown, v.said, v.picked, v.table, v.branches, graph], show_progress="hidden", **measuring)
    v.profile.click(profiled, session, [v.costs_said, v.costs_graph, v.top, v.modules, v.per_line], **measuring)
    return lines_event


MARKED = "background-color: #fde68a; font-weight: 600"  # the row of the line that made the node clicked


def _marked(rows: list[list[Any]], row: int) -> Styler:
    """The lines table with one row marked (Gradio shows a pandas Styler's cell styles)."""
    return pd.DataFrame(rows, columns=LINES_COLUMNS).style.apply(
        lambda r: [MARKED if r.name == row else "" for _ in r], axis=1)
