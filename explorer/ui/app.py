"""The page: a tab per part (the Playground, one per lab from its spec, the claims, the lessons), the panels, the
API's endpoints, and the server's launch."""

from __future__ import annotations

import argparse
import logging
import os

import gradio as gr
from starlette.middleware import Middleware

from explorer.code.allowed import ENV as ALLOW_ENV
from explorer.code.allowed import code_allowed
from explorer.core.confine import offered
from explorer.core.errors import InputError
from explorer.core.machine import describe, freeze_startup_objects
from explorer.labs.registry import LABS
from explorer.runs.session import Session
from explorer.server import (
    EXPORTS,
    MEASURE_EVENTS,
    RESIDENCY,
    ROOMS,
    SESSION_TTL_S,
    prepare_process,
    start_background_work,
)
from explorer.serving.addresses import LongAddressGuard
from explorer.serving.api_names import NamedCallGuard
from explorer.serving.placement import compile_service
from explorer.sources.registry import add_model_file
from explorer.ui.address import address_boxes
from explorer.ui.claims import cached_claims, claims_tab, lessons_tab
from explorer.ui.code import code_tab
from explorer.ui.config_cache import ConfigCache
from explorer.ui.downloads import Downloads
from explorer.ui.endpoints import add_endpoints
from explorer.ui.frames import TrackerFrames
from explorer.ui.generation import generation_panel
from explorer.ui.internals import Blocks, keep_load_events_private
from explorer.ui.labs import cancel_runs_of, lab_tab
from explorer.ui.panels import downloads_panel, header, limits_panel
from explorer.ui.playground import playground_tab, wire_playground
from explorer.ui.room import PULSE, kept_rooms, room_box
from explorer.ui.room_pulse import RoomPulse
from explorer.ui.theme import CSS, PAGE_JS, PRESENT_JS

log = logging.getLogger("graph_explorer")


def _closed(request: gr.Request) -> None:
    """The tab closed: free its session's model and last run now, not when the state's TTL expires; stop the
    server-wide lab run it started, if one is going."""
    RESIDENCY.close(request.session_hash)
    cancel_runs_of(request.session_hash)


def _forget_files(session: Session) -> None:
    EXPORTS.forget(session.id)


def build_app(code: bool = False) -> gr.Blocks:
    """The page; with `code`, the Code tab, where a visitor's edits of a model's Python run (in the code worker)."""
    with Blocks(title="Graph Explorer") as demo:
        session = gr.State(lambda: Session(residency=RESIDENCY, isolate=compile_service), time_to_live=SESSION_TTL_S,
                           delete_callback=_forget_files)  # its downloads go with it
        kept = kept_rooms()
        address = address_boxes()  # (outside every tab, as `kept`)
        present, link = header()
        # every tab's name in view, on a projector or a phone: past the width they wrap onto a second row (Gradio's
        # menu, measured once, could hide the Claims tab behind "..." when the font arrived late)
        with gr.Tabs(overflow_behavior="wrap") as tabs:
            with gr.Tab("Playground", id="playground") as playground_page:
                playground = playground_tab()
                generation_panel(session)
            for spec in LABS.values():
                with gr.Tab(spec.title, id=spec.name) as lab:
                    lab_tab(spec, session, tab=lab)
            with gr.Tab("Claims", id="claims") as claims:
                cards = claims_tab(session)
            with gr.Tab("Lessons", id="lessons") as lessons:
                lesson, wire_room = lessons_tab("lessons", lambda: room_box(kept, session))
                room = wire_room(lesson)
            if code:  # the operator allowed visitors' code (explorer/code/allowed.py)
                with gr.Tab("Code", id="code") as code_page:
                    code_tab(address.asked, tabs, code_page, session)
        claims.select(lambda: cached_claims(cards), None, [x for c in cards for x in c.outputs], queue=False,
                      api_visibility="private")
        # the step on screen with the board as it is now (a claim measured on the Claims tab since the page loaded)
        # on the Lessons tab, the header's link is the step's (the Playground's tab takes it back)
        lend_link = {"fn": lambda step_link: step_link, "inputs": lesson.link, "outputs": link, "queue": False,
                     "api_visibility": "private", "show_progress": "hidden"}
        lessons.select(lesson.at, lesson.number, lesson.outputs, queue=False, api_visibility="private").then(
            **lend_link)
        lesson.link.change(**lend_link)  # a step moved

        def open_lesson(request: gr.Request) -> dict:
            """`?lesson=N` opens that step, `?present=1` presentation mode (both kept in the address as they change:
            a reload comes back to the same step, projected)."""
            on = request.query_params.get("present") == "1"
            return {**lesson.opened(tabs, request), present: True if on else gr.skip()}

        # queued: a bad step's warning reaches the page
        address.asked.change(open_lesson, None, [tabs, *lesson.outputs, present], api_visibility="private",
                             concurrency_limit=None, show_progress="hidden")

        def open_room(kept: dict | None, s: Session, request: gr.Request) -> dict:
            """`?room=CODE` opens the Lessons tab in that room (explorer/ui/room.py)."""
            shown = room.loaded(kept, s, request)
            inside = isinstance(shown.get(room.code), str) and shown[room.code]
            return {**shown, tabs: gr.Tabs(selected="lessons") if inside else gr.skip()}

        address.asked.change(open_room, [room.kept, session], [tabs, *room.with_lesson, room.kept],
                             api_visibility="private", concurrency_limit=None, show_progress="hidden").then(**PULSE)
        downloads_panel(session)
        limits_panel()
        wire_playground(address.linked, session, playground, link, playground_page)
        address.read_at_load(demo, playground.text)
        present.change(None, present, None, js=PRESENT_JS, api_visibility="private")
        demo.unload(_closed)
        add_endpoints()
    keep_load_events_private(demo)
    return demo


def public_api(demo: gr.Blocks) -> dict[str, tuple[str, ...]]:
    """The endpoints a client may call by name, with their parameters in order: what the API page documents."""
    return {path.lstrip("/"): tuple(p["parameter_name"] for p in info["parameters"])
            for path, info in demo.get_api_info()["named_endpoints"].items()}


def add_models(argv: list[str] | None = None) -> None:
    """The command line: the operator's model files (`--model`, repeatable), loaded and checked before the server
    starts (one that does not load is one line and exit code 2; spawned workers load them too: GE_MODELS), and
    `--allow-code`."""
    p = argparse.ArgumentParser(prog="app.py", description="Serve Graph Explorer's web UI.")
    p.add_argument("--model", action="append", default=[], metavar="FILE.py[:factory]",
                   help="add your own model to the menu (repeatable; the GE_MODELS variable does the same): a file "
                        "or module whose factory's signature is the architecture (docs/models.md)")
    p.add_argument("--allow-code", action="store_true",
                   help="add the Code tab, where whoever opens the page edits a model's Python and runs it on this "
                        "machine (walled in; GE_ALLOW_CODE=1 does the same; docs/code-tab.md)")
    args = p.parse_args(argv)
    if args.allow_code:
        os.environ.setdefault(ALLOW_ENV, "1")
    for spec in args.model:
        try:
            log.info("model %s added from %s", add_model_file(spec), spec)
        except InputError as e:
            p.error(f"--model {e}")


def main() -> None:
    add_models()
    host = os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    code = code_allowed(host)  # refused here, before anything starts, where it would be open to a network unasked
    prepare_process()  # first: before any thread exists
    start_background_work()
    demo = build_app(code)
    freeze_startup_objects()
    demo.queue(max_size=3 * MEASURE_EVENTS, default_concurrency_limit=1)
    log.info("Graph Explorer on %s, measuring with %s", f"http://{host}:{port}", describe())
    if code:
        log.info("%s", offered().said())
    demo.launch(server_name=host, server_port=port, css=CSS, js=PAGE_JS, footer_links=["api", "gradio"],
                show_error=True,  # Gradio's own refusals (too few values) are one line, not {"error": null}
                app_kwargs={"middleware": [Middleware(LongAddressGuard), Middleware(ConfigCache),
                                           Middleware(TrackerFrames), Middleware(Downloads, root=EXPORTS.path),
                                           Middleware(RoomPulse, rooms=ROOMS),
                                           Middleware(NamedCallGuard, public=public_api(demo))]},
                max_threads=MEASURE_EVENTS + 16)  # every queued run holds a thread while it waits its turn
