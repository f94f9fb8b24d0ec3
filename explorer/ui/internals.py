"""Every reach into Gradio's internals, in one place (gradio is pinned; tests/app/test_gradio_internals.py names the
internal an upgrade changed): `Blocks`, whose outputs left out of a handler's answer cost the server nothing, and
whose sessions build their blocks' configs as read; an endpoint's values checked before it queues; Gradio's own
load events kept out of the API.

A handler here answers `{component: value}` with only what changed (a progress line is one output of eight).
Gradio 6 turns every output left out into `gr.skip()` and then, for each one, builds a new component from the
old one's arguments, recomputes its config (a pydantic JSON schema among it) and hops to a worker thread to
postprocess it, only to send `{"__type__": "update"}`, which changes nothing. For the Playground, whose progress
lines leave seven outputs of eight out, that was most of what Gradio cost the server per edit (the class runs'
CPU by phase in bench/RESULTS-load.md, before and after).
Here the outputs that were given go through Gradio's own postprocessing, unchanged; the rest are sent as the
update Gradio would have sent (its own `postprocess_update_dict` of an empty update, once per kind of
component). `tests/app/test_server_cpu.py` checks the answers equal Gradio's own.

And a visitor's session starts without a config for each of the page's 521 blocks: Gradio builds them all when a
session's first event arrives, on the event loop (a pydantic JSON schema each, 40-80 ms a session), to save a deep
link this app does not offer; when a class opened the page at once, that held every other visitor's messages for
seconds, and it was a fifth of the server's CPU over a lecture (bench/RESULTS-load.md). Here each block's config is
built when first read, as Gradio builds those of the blocks a run updates.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import gradio as gr
from gradio.blocks import Block, BlockFunction, postprocess_update_dict
from gradio.context import get_blocks_context
from gradio.state_holder import SessionState, StateHolder

SKIP: dict[str, str] = gr.skip()  # {"__type__": "update"}: what Gradio sends for an output left unchanged


def _left_out(value: Any) -> bool:
    return isinstance(value, dict) and value == SKIP


def _unchanged(block: Block) -> Any:
    """What Gradio sends for an output left unchanged: None for a state, else its own empty update (an HTML
    component's carries an empty `props`). It reads nothing of the component but its kind: once per kind."""
    kind = type(block)
    if kind not in _UNCHANGED:
        _UNCHANGED[kind] = None if block.stateful else postprocess_update_dict(block, dict(SKIP), postprocess=False)
    return copy.deepcopy(_UNCHANGED[kind])


_UNCHANGED: dict[type[Block], Any] = {}


class Blocks(gr.Blocks):
    def launch(self, *args: Any, prevent_thread_lock: bool = False, **kwargs: Any) -> Any:
        """Gradio's launch, with the app's sessions lean (`Sessions`): Gradio's App builds its own holder of
        sessions, made a `Sessions` in place as soon as the server is up (its data and lock unchanged; a session
        begun before would be Gradio's own, whole)."""
        launched = super().launch(*args, prevent_thread_lock=True, **kwargs)
        self.server_app.state_holder.__class__ = Sessions
        if not prevent_thread_lock:
            self.block_thread()
        return launched

    async def postprocess_data(self, block_fn: BlockFunction, predictions: list | dict,
                               state: SessionState | None) -> list[Any]:
        answered = (isinstance(predictions, dict) and predictions and not block_fn.batch
                    and all(isinstance(k, Block) for k in predictions))
        if not answered:
            return await super().postprocess_data(block_fn, predictions, state)
        given = {k._id: v for k, v in predictions.items() if not _left_out(v)}  # type: ignore[union-attr]
        kept = [o for o in block_fn.outputs if o._id in given]
        if len(kept) == len(block_fn.outputs):
            return await super().postprocess_data(block_fn, predictions, state)
        done: list[Any] = []
        if kept:
            sub = copy.copy(block_fn)  # the same event, answering for the given outputs only
            sub.outputs = kept
            values = [given[o._id] for o in kept]
            done = await super().postprocess_data(sub, values[0] if len(kept) == 1 else values, state)
        answers = iter(done)
        return [next(answers) if o._id in given else _unchanged(o) for o in block_fn.outputs]


class _Configs:
    """What `SessionState.__init__` reads of the Blocks: their default config, and no block to build a config for."""

    def __init__(self, blocks: gr.Blocks) -> None:
        self.default_config, self.blocks = blocks.default_config, {}


class LeanSessionState(SessionState):
    """Gradio's session state, whose blocks' configs are built when first read (see the module's docstring)."""

    def __init__(self, blocks: gr.Blocks) -> None:
        super().__init__(_Configs(blocks))  # type: ignore[arg-type]  # Gradio's own, with no config built yet
        self._page = blocks.blocks

    @property
    def components(self) -> Any:
        """Every block's config (what a deep link saves), as Gradio's own session holds them: those not read yet
        are built now."""
        for key, block in self.blocks_config.blocks.items():
            if key in self._page and key not in self.config_values:
                self.config_values[key] = self.blocks_config.config_for_block(key, [], block)
        return super().components


class Sessions(StateHolder):
    """The app's sessions' Gradio states, each a `LeanSessionState`."""

    def __getitem__(self, session_id: str) -> SessionState:
        if session_id not in self.session_data:
            self.session_data[session_id] = LeanSessionState(self.blocks)
        return super().__getitem__(session_id)


def check_before_queueing(dependency: dict[str, Any], validator: Callable[..., list[dict[str, Any]]]) -> None:
    """`validator` (returning a `gr.validate` per value) runs as the request arrives, before it waits in its queue
    and before any work: Gradio's validator hook, which event listeners take and `gr.api` does not. Call it inside
    the Blocks the `gr.api` dependency was made in."""
    get_blocks_context().fns[dependency["id"]].validator = validator


def keep_load_events_private(demo: gr.Blocks) -> None:
    """Gradio's own load events (a session state's factory, named `lambda...`) out of the API's list."""
    for fn in demo.fns.values():
        if fn.api_visibility == "public" and (fn.api_name or "").startswith("lambda"):
            fn.api_visibility = "private"
