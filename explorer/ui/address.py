"""What a page's address asks of the tabs beyond the Playground's state: a lesson step (`?lesson=`), presentation
mode (`?present=`), a room (`?room=`), a code edit (`?code=`). The browser reads it at load and the server's openers
run only for an address that names one of them: each opener's outputs (the lesson's step, the room's box, the
editor) would otherwise hold a loading status on every visitor's page, and Gradio's page walks every component
holding one at each status message of every event (what a load costs: bench/RESULTS-page-load.md)."""

from __future__ import annotations

import json

import gradio as gr

ASKED = ("lesson", "present", "room", "code")

# The address's query when it names an opener, else "" (the value the box starts with: no change, no event).
_READ_JS = f"""() => {{
  const query = new URLSearchParams(window.location.search);
  return {json.dumps(list(ASKED))}.some((key) => query.has(key)) ? window.location.search : '';
}}"""


def address_box(demo: gr.Blocks) -> gr.Textbox:
    """A box, in the page but never shown, that takes the address's query once the page loads, if the address asks
    something of a tab: its change is the event the openers run on. Made outside every tab (an unopened tab's
    components are not on the page)."""
    asked = gr.Textbox("", visible="hidden", label="the address's request", interactive=False)
    demo.load(None, None, asked, js=_READ_JS, api_visibility="private")
    return asked
