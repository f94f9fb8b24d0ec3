"""Each reach into Gradio's internals (explorer/ui/internals.py, the one module that makes them) checked against the
installed Gradio: an upgrade that changes one fails here with the internal's name and what rests on it, instead of
the app going slow (every output rebuilt again), its sessions whole, or its endpoints queueing what they refuse.
tests/app/test_server_cpu.py checks that what the lean path answers equals Gradio's own. The browser tests' one
reach into Gradio's page is checked here too."""

import inspect
import re
from pathlib import Path

import gradio as gr
from gradio import blocks, state_holder

from explorer.ui import internals


def _relies(ok: bool, internal: str, what: str, by: str = "explorer/ui/internals.py") -> None:
    assert ok, f"gradio {gr.__version__} changed {internal}; {by} relies on it: {what}"


def _params(fn: object) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_the_postprocessing_it_narrows_is_gradios_own():
    _relies(_params(blocks.postprocess_update_dict)[:3] == ["block", "update_dict", "postprocess"],
            "gradio.blocks.postprocess_update_dict(block, update_dict, postprocess)",
            "an output left out of an answer is sent as Gradio's own empty update")
    _relies(inspect.iscoroutinefunction(gr.Blocks.postprocess_data)
            and _params(gr.Blocks.postprocess_data) == ["self", "block_fn", "predictions", "state"],
            "Blocks.postprocess_data(block_fn, predictions, state) (async)",
            "only the outputs an answer gives are postprocessed")
    with gr.Blocks() as demo:
        text, button = gr.Textbox(), gr.Button()
        button.click(lambda x: x, text, text)
    fn = next(iter(demo.fns.values()))
    _relies(isinstance(fn, blocks.BlockFunction) and fn.outputs == [text] and fn.batch is False,
            "BlockFunction.outputs and .batch", "an event is copied with the outputs its answer gives")


def test_a_session_builds_its_configs_from_what_gradio_reads():
    read = set(re.findall(r"(?<![\w.])blocks\.(\w+)", inspect.getsource(state_holder.SessionState.__init__)))
    _relies(read <= {"default_config", "blocks"}, f"SessionState.__init__ (it reads blocks.{sorted(read)})",
            "a session starts from the page's default config with no block's config built")
    _relies("SessionState(self.blocks)" in inspect.getsource(state_holder.StateHolder.__getitem__)
            and {"session_data", "lock", "time_last_used"} <= set(vars(state_holder.StateHolder())),
            "StateHolder.__getitem__ and its session_data", "the app's sessions are made lean in place")
    _relies(hasattr(blocks.BlocksConfig, "config_for_block") and "components" in vars(state_holder.SessionState),
            "BlocksConfig.config_for_block and SessionState.components", "a block's config is built when first read")
    _relies("state_holder" in inspect.getsource(gr.routes.App.__init__), "App.state_holder",
            "the launched app's holder of sessions is made a `Sessions`")


def test_an_endpoints_check_runs_before_it_queues_through_gradios_validator_hook():
    def check(value: str) -> list[dict]:
        return [gr.validate(value != "bad", "refused")]

    with gr.Blocks() as demo:
        def echo(value: str) -> str:
            return value

        internals.check_before_queueing(gr.api(echo, api_name="echo"), check)
    fn = next(iter(demo.fns.values()))
    _relies(fn.validator is check and "validator" in _params(gr.on),
            "BlockFunction.validator (the hook event listeners take as `validator=`)",
            "an API endpoint's values are refused as the request arrives")


def test_gradios_own_load_events_are_kept_out_of_the_api():
    with gr.Blocks() as demo:
        gr.State(lambda: 1)
        demo.load(lambda: None, None, None)
    internals.keep_load_events_private(demo)
    _relies(all(fn.api_visibility == "private" for fn in demo.fns.values()
                if (fn.api_name or "").startswith("lambda")), "BlockFunction.api_visibility / api_name",
            "Gradio's own load events are not listed among the API's endpoints")


def test_the_browser_tests_wait_for_a_first_opening_by_a_name_in_gradios_page():
    """tests/app/browser.py: opened() counts the animation frames asked for by this method of Gradio's page, after
    which it sets what a first opening draws to its values at load."""
    assets = Path(gr.__file__).parent / "templates" / "frontend" / "assets"
    method = re.compile(r"async render_previously_invisible_children\(\w+\)\{[^}]*requestAnimationFrame")
    _relies(any(method.search(f.read_text(errors="replace")) for f in assets.glob("*.js")),
            "its page's render_previously_invisible_children (awaits a frame, then sets the values)",
            "a browser test types in a tab or an accordion once its first opening has set them", "tests/app/browser.py")
