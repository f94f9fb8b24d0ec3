"""What a page's address asks for, read in the browser at load so that the server runs only what it names.

Two kinds of parameters: the tabs' own (`?lesson=` a lesson step, `?present=` presentation mode, `?room=` a room,
`?code=` a code edit) and every other one but Gradio's own (`?__theme=`), a Playground state link's
(`?model=...&text=...`). A plain visit names neither: its input gets the default text in the browser (that change
is the first run) and no opener runs. Each opener's outputs (every control of the Playground for a state link, the
lesson's step, the room's box, the editor) would otherwise hold a loading status on every visitor's page, and
Gradio's page walks every component holding one at each status message of every event (what a load costs:
bench/RESULTS-page-load.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

from explorer.core.examples import DEFAULT_TEXT

TABS_PARAMS = ("lesson", "present", "room", "code")
GRADIO_PARAMS = ("__theme", "view", "deep_link")  # Gradio's page reads these itself (a Space's `?__theme=dark`)
PAGE_PARAMS = TABS_PARAMS + GRADIO_PARAMS  # every other parameter is a state link's

# (asked, linked, text) -> the tabs' part of the query if any (else as it was: no change, no event), the whole query
# if it has a state link's parameter, and the default text if it has none (a state link's opener sets the text).
_READ_JS = """(asked, linked, text) => {
  const query = new URLSearchParams(window.location.search), tabs = TABS, page = PAGE;
  const keys = [...query.keys()];
  const state = keys.some((key) => !page.includes(key));
  return [keys.some((key) => tabs.includes(key)) ? window.location.search : asked,
          state ? window.location.search : linked, state ? text : DEFAULT];
}"""


@dataclass(frozen=True)
class Address:
    """Two boxes in the page, never shown: their changes are the events the openers run on. Made outside every tab
    (an unopened tab's components are not on the page)."""

    asked: gr.Textbox  # the query, when it has a tab's parameter
    linked: gr.Textbox  # the query, when it has a state link's parameter

    def read_at_load(self, demo: gr.Blocks, text: gr.Textbox) -> None:
        """At load, in the browser: the boxes filled from the address, or the Playground's input `text` set to the
        default text."""
        js = (_READ_JS.replace("TABS", json.dumps(list(TABS_PARAMS))).replace("PAGE", json.dumps(list(PAGE_PARAMS)))
              .replace("DEFAULT", json.dumps(DEFAULT_TEXT)))
        demo.load(None, None, [self.asked, self.linked, text], js=js, api_visibility="private")


def address_boxes() -> Address:
    return Address(*(gr.Textbox("", visible="hidden", label=label, interactive=False)
                     for label in ("the address's request of a tab", "the address's state link")))
