"""The Claims tab (a card per claim) and the Lessons tab (a class over the claims, a card per step, a link per
step). A card's outputs are declared on the card; its handlers return {component: value}."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import gradio as gr

from explorer.api import workers
from explorer.artefacts.lesson import lesson_notebook
from explorer.claims.board import CLAIMS
from explorer.claims.chosen import Chosen
from explorer.claims.evidence import Claim
from explorer.claims.lessons import STEPS, readiness, step, step_markdown
from explorer.claims.turns import Turn
from explorer.core import limits
from explorer.core.errors import USER_ERRORS
from explorer.core.queues import Queue
from explorer.runs.session import Session
from explorer.server import CLAIM_BOARD, EXPORTS
from explorer.ui.controls import cards_html
from explorer.ui.stream import Updates, streamed
from explorer.ui.theme import LESSON_NEXT_ID, LESSON_PREV_ID
from explorer.views.claims import ClaimView, cached_view, claim_update
from models.config import config_dict

T = TypeVar("T")


def _claim_header(c: Claim, number: int | None) -> str:
    """The card's claim and experiment; in a lesson (`number` None) the experiment only: the step states the claim."""
    where = (f'<a href="{html.escape(c.reproduce)}" target="_blank">reproduce it in the Playground</a>'
             if c.reproduce.startswith("?") else f"reproduce it in the {html.escape(c.reproduce)}")
    claim = f"### {number}. “{c.statement}”\n" if number is not None else ""
    return f"{claim}{c.experiment} ({where})"


@dataclass
class ClaimCard:
    """One claim's card: what is claimed, the buttons, and what the experiment measured."""

    header: gr.Markdown
    run: gr.Button
    again: gr.Button
    mine: gr.Button  # on the Playground's model (shown only where the claim's experiment runs model by model)
    status: gr.Markdown
    figure: gr.Plot
    numbers: gr.HTML
    verdict: gr.Markdown
    headline: gr.Markdown  # the verdict in one line: shown projected in a lesson, where the paragraph is not
    raw: gr.JSON
    evidence: gr.Row  # the figure, the numbers and the verdict: a room's step keeps them folded until the reveal
    chart_height: int  # px: a lesson's is shorter, so that it fits the first screen beside the step

    @property
    def outputs(self) -> list[Any]:
        return [self.status, self.figure, self.numbers, self.verdict, self.headline, self.raw]

    def shown(self, view: ClaimView | None) -> Updates:
        """The card's outputs for a result (None: not measured on this server lately)."""
        if view is None:
            return {self.status: "Not measured on this server lately: run the experiment.", self.figure: None,
                    self.numbers: "", self.verdict: "", self.headline: "", self.raw: None}
        figure = view.figure.update_layout(height=self.chart_height)
        return {self.status: view.status, self.figure: figure, self.numbers: cards_html(view.numbers),
                self.verdict: view.verdict, self.headline: view.headline, self.raw: view.report}

    def wire(self, claim_id: Callable[..., str], inputs: list[Any], buttons: tuple[gr.Button, gr.Button] | None = None,
             queue: Queue = Queue.CLAIMS, turn: Turn = Turn.VISITOR) -> None:
        """Both buttons (the card's own, or `buttons`: run, measure again) run the card's claim (from `inputs`: a
        fixed one, or the lesson's step), one at a time in `queue`, each experiment in its `turn` on the board."""
        for button, again in zip(buttons or (self.run, self.again), (False, True), strict=True):
            def go(*values: Any, again: bool = again) -> Iterator[Updates]:
                try:
                    c = claim_id(*values)
                except USER_ERRORS as e:  # not this page's to run (a room's experiment, from a student's page)
                    yield {self.status: f"*{e}*"}
                    return
                items = claim_update(CLAIM_BOARD, workers(), c, again, turn=turn)
                yield from streamed(items, self.shown, self.status, "The experiment stopped", took=CLAIM_BOARD.took(c))
            # the status line says what runs, every second: Gradio's own estimate (from other events) would not
            button.click(go, inputs, self.outputs, api_visibility="private", concurrency_id=queue.value,
                         concurrency_limit=1, show_progress="hidden")

    def wire_mine(self, c: Claim, session: gr.State) -> None:
        """The third button: the claim's experiment on the session's model and config, shown to this person only."""
        def go(s: Session) -> Iterator[Updates]:
            chosen = Chosen(s.model_name, config_dict(s.config))
            items = claim_update(CLAIM_BOARD, workers(), c.id, model=chosen)
            yield from streamed(items, self.shown, self.status, "The experiment stopped", kind=f"{c.id} on a model")
        self.mine.click(go, session, self.outputs, api_visibility="private", concurrency_id=Queue.CLAIMS.value,
                        concurrency_limit=1, show_progress="hidden")


def claim_card(c: Claim, number: int | None) -> ClaimCard:
    """The card of claim `c`: in the Claims tab with its `number`, in a lesson without (the step states the claim)."""
    # in a lesson too: it holds the link a step asks the room to open
    header = gr.Markdown(_claim_header(c, number), elem_classes="ge-claim-head")
    with gr.Row():
        run = gr.Button("Run the experiment", variant="primary", scale=0, min_width=250)  # one line, presented too
        again = gr.Button("Measure again", scale=0, min_width=190)
        mine = gr.Button("Run it on the Playground's model", scale=0, min_width=240,
                         visible=c.on_model is not None and number is not None)  # not in a lesson
    status = gr.Markdown(elem_classes="ge-claim-status")
    with gr.Row(elem_classes="ge-evidence") as evidence:
        with gr.Column(scale=3):
            figure = gr.Plot(show_label=False)
        with gr.Column(scale=2, min_width=280):
            headline = gr.Markdown(elem_classes="ge-verdict-head")
            numbers = gr.HTML()  # the figures a lesson step names, above the verdict's paragraph: on the first screen
            verdict = gr.Markdown(elem_classes="ge-verdict")
    with gr.Accordion("raw numbers (the same as `python -m explorer claim --json`)", open=False):
        raw = gr.JSON(show_label=False)
    return ClaimCard(header, run, again, mine, status, figure, numbers, verdict, headline, raw, evidence,
                     380 if number else 330)


def claims_tab(session: gr.State) -> list[ClaimCard]:
    """Every claim's card in order (the tab's opening fills them from the server's board)."""
    gr.Markdown(
        "What people say about dynamic graphs, each tested **on this server**: one button runs the experiment "
        "(built from the Playground's and the labs' engines), and a verdict is computed from what it measured. "
        f"A result is shown to everyone on this server for {limits.CLAIMS_TTL_S / 60:.0f} minutes "
        "(`GE_CLAIMS_TTL_S`), labelled with when it was measured; *Measure again* runs it anew. Where the "
        "experiment runs model by model, *Run it on the Playground's model* runs it on yours (its model and "
        "architecture), for you only.",
        elem_classes="explain")
    cards = []
    for number, c in enumerate(CLAIMS.values(), 1):
        with gr.Group():
            card = claim_card(c, number)
        card.wire(lambda c=c: c.id, [])
        if c.on_model is not None:
            card.wire_mine(c, session)
        cards.append(card)
    return cards


def cached_claims(cards: list[ClaimCard]) -> Updates:
    """Each card with this server's recent result of its claim."""
    return {k: v for card, c in zip(cards, CLAIMS, strict=True)
            for k, v in card.shown(cached_view(CLAIM_BOARD, c)).items()}


@dataclass
class LessonPanel:
    tab: str  # the Lessons tab's id
    number: gr.State
    text: gr.Markdown
    link: gr.HTML
    card: ClaimCard
    ready: gr.Markdown  # how many steps this server has measured, until when, which it is measuring
    shown_at: gr.State  # when the result on the card was measured (None: none): a newer one is shown as it arrives

    @property
    def outputs(self) -> list[Any]:
        return [self.number, self.text, self.link, self.card.header, *self.card.outputs, self.ready, self.shown_at]

    def at(self, number: int) -> Updates:
        """Everything a step shows: its text, its card's claim and the server's recent result for it."""
        c = CLAIMS[step(number).claim]
        result = CLAIM_BOARD.cached(c.id)
        return {self.number: number, self.text: step_markdown(number, CLAIM_BOARD.took(c.id)),
                self.link: _lesson_link(number), self.ready: readiness(CLAIM_BOARD),
                self.shown_at: result.measured_at if result else None,
                self.card.header: _claim_header(c, None), **self.card.shown(cached_view(CLAIM_BOARD, c.id))}

    def ticked(self, number: int, shown_at: float | None) -> Updates:
        """Every READY_TICK_S: the board's state, and the step's card again only if a newer result arrived."""
        result = CLAIM_BOARD.cached(step(number).claim)
        if (result.measured_at if result else None) != shown_at:
            return self.at(number)
        return {self.ready: readiness(CLAIM_BOARD)}

    def opened(self, tabs: gr.Tabs, request: gr.Request) -> Updates:
        """`?lesson=N` opens the Lessons tab at step N (a bad N is said, and step 1 opens); other links leave it."""
        raw = request.query_params.get("lesson")
        if raw is None:  # a dict with a component: an empty one is not read as "no updates" (a silent error)
            return {tabs: gr.skip()}
        try:
            shown = self.at(int(raw))
        except (ValueError, *USER_ERRORS):
            gr.Warning(f"This link's lesson step {raw!r} does not exist: the lesson has steps 1 to {len(STEPS)}.")
            shown = self.at(1)
        return {tabs: gr.Tabs(selected=self.tab), **shown}


# The step in the address bar (replaced, not pushed: Back leaves the lesson, as it came)
STEP_URL_JS = """(link) => {
  const step = /[?&]lesson=(\\d+)/.exec(link || '');  // the step's link, just shown: a State never reaches the page
  if (!step) return;
  const url = new URL(window.location.href);
  url.searchParams.set('lesson', step[1]);
  window.history.replaceState(null, '', url);
}"""


READY_TICK_S = 15.0  # how often an open Lessons tab asks the board (a hundred pages: seven cheap requests a second)


def _step_notebook(number: int) -> gr.File:
    """Step `number` as a notebook to download, with this server's result of its claim to set beside its own."""
    notebook = lesson_notebook(number, CLAIM_BOARD.cached(STEPS[number - 1].claim))
    return gr.File(EXPORTS.save(f"step-{number}.ipynb", notebook.encode()), visible=True)


def _lesson_link(number: int) -> str:
    return (f'<a href="?lesson={number}" target="_blank" title="open the class at this step">🔗 link to step '
            f"{number}</a>")


def lessons_tab(tab: str, under_step: Callable[[], T]) -> tuple[LessonPanel, T]:
    """The lesson's step beside its claim's card, and what `under_step` makes under the step's buttons (a class's
    room: its code and question in the step's column, so that the card keeps the first screen projected)."""
    gr.Markdown(f"A {sum(s.minutes for s in STEPS)}-minute class over the claims, one card per step: what to do, "
                "what to notice, one question for the room. Each step has a link of its own.", elem_classes="explain")
    number = gr.State(1)
    with gr.Row(elem_classes="ge-lesson"):  # projected, in large type (theme.CSS)
        with gr.Column(scale=2, min_width=300):
            text = gr.Markdown(step_markdown(1), elem_classes="ge-step")
            with gr.Row():  # one line, in presentation mode too; a clicker's keys press them (theme.PAGE_JS)
                prev = gr.Button("← previous", scale=0, min_width=160, elem_id=LESSON_PREV_ID)
                nxt = gr.Button("next →", variant="primary", scale=0, min_width=160, elem_id=LESSON_NEXT_ID)
            under = under_step()
            link = gr.HTML(_lesson_link(1), elem_classes="ge-teachers")
            ready = gr.Markdown(readiness(CLAIM_BOARD), elem_classes="ge-ready")  # beside the step
            notebook_btn = gr.Button("this step as a notebook", size="sm", scale=0, min_width=160,
                                     elem_classes="ge-teachers")
            notebook = gr.File(label="the step's notebook (its experiment runs on your machine)", visible=False,
                               interactive=False)
        with gr.Column(scale=3):
            card = claim_card(CLAIMS[STEPS[0].claim], None)
    panel = LessonPanel(tab, number, text, link, card, ready, gr.State(None))
    # open pages learn of a result measured meanwhile (the warm-up's, another room's) without a click; a tick that
    # finds nothing new sends one line
    gr.Timer(READY_TICK_S).tick(panel.ticked, [number, panel.shown_at], panel.outputs, queue=False,
                                api_visibility="private", show_progress="hidden")
    notebook_btn.click(_step_notebook, number, notebook, api_visibility="private", concurrency_id=Queue.EXPORT.value)
    # Queued one at a time and every click kept: two quick clicks ran side by side and both read the step before
    # them (CI's browser went back one step for two); each now reads the step the one before it left.
    walk = {"api_visibility": "private", "concurrency_id": Queue.STEPS.value, "concurrency_limit": 1,
            "trigger_mode": "multiple", "show_progress": "hidden"}
    for button, move in ((prev, lambda n: max(1, n - 1)), (nxt, lambda n: min(len(STEPS), n + 1))):
        # the address follows the step: a reload, or the link copied from the address bar, opens it again
        button.click(lambda n, move=move: panel.at(move(n)), number, panel.outputs, **walk).then(
            None, link, None, js=STEP_URL_JS, api_visibility="private")
    card.wire(lambda n: step(n).claim, [number])
    return panel, under
