"""What saves the server's CPU changes no answer: the lean Blocks send what Gradio's own would for every way a
handler answers a subset of outputs; a session starts without its blocks' configs and holds Gradio's own once read;
the config cache asks Gradio once per address and passes anything else on."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import gradio as gr
import plotly.graph_objects as go
import pytest
from gradio.blocks import BlocksConfig
from gradio.state_holder import SessionState
from gradio_client import Client

from explorer.ui.config_cache import ConfigCache
from explorer.ui.frames import SCRIPT, TrackerFrames
from explorer.ui.internals import Blocks, LeanSessionState, Sessions


def _run(coroutine):
    """The coroutine's result, on an event loop of its own thread: a browser test before this one in the same
    process (Playwright's sync API) leaves a loop running in this thread, where asyncio.run refuses."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _page(cls: type[gr.Blocks]) -> tuple[gr.Blocks, list]:
    with cls() as demo:
        outputs = [gr.State(), gr.Plot(), gr.HTML(), gr.JSON(), gr.Markdown(), gr.Dropdown(["a"], value="a"),
                   gr.Textbox()]
        button = gr.Button()
        button.click(lambda: None, None, outputs, api_name="run")
    return demo, outputs


ANSWERS = [
    lambda o: {o[4]: "status only"},
    lambda o: {o[4]: "status", o[1]: go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), o[3]: {"a": [1, 2]}},
    lambda o: {o[0]: {"session": 1}, o[5]: gr.update(choices=["a", "b"], value="b"), o[6]: "text"},
    lambda o: {o[4]: gr.skip(), o[6]: "the skipped one is left out"},
    lambda o: {o[4]: gr.skip()},  # nothing given at all
    lambda o: {c: v for c, v in zip(o, [{"s": 2}, None, "<b>x</b>", [1], "md", "a", "t"], strict=True)},
    lambda o: gr.skip(),
    lambda o: [{"s": 3}, None, "<i>y</i>", {}, "m", "a", "u"],  # a list: Gradio's own path
]


@pytest.mark.parametrize("answer", range(len(ANSWERS)))
def test_the_answer_is_gradios_own(answer: int) -> None:
    got = []
    for cls in (gr.Blocks, Blocks):
        demo, outputs = _page(cls)
        fn = next(f for f in demo.fns.values() if f.api_name == "run")
        state = SessionState(demo)
        sent = _run(demo.postprocess_data(fn, ANSWERS[answer](outputs), state))
        kept = state.get(outputs[0]._id, None)
        got.append((sent, kept))
    assert got[1] == got[0]


def test_an_output_left_out_builds_no_component(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: Gradio constructs a component for each output left out; the lean page does not."""
    demo, outputs = _page(Blocks)
    fn = next(f for f in demo.fns.values() if f.api_name == "run")
    built = []
    original = gr.Plot.__init__

    def counting(self: gr.Plot, *args: object, **kwargs: object) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(gr.Plot, "__init__", counting)
    _run(demo.postprocess_data(fn, {outputs[4]: "status only"}, SessionState(demo)))
    assert built == []


def test_a_session_builds_no_config_until_one_is_read_and_then_holds_gradios_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    demo, outputs = _page(Blocks)
    fn = next(f for f in demo.fns.values() if f.api_name == "run")
    built = []
    original = BlocksConfig.config_for_block

    def counting(*args: object, **kwargs: object) -> dict:
        built.append(args[0])
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(BlocksConfig, "config_for_block", staticmethod(counting))
    lean, whole = LeanSessionState(demo), SessionState(demo)
    assert built == list(whole.config_values)  # Gradio's own built one per block at once; the lean one, none
    built.clear()
    for state in (lean, whole):
        _run(demo.postprocess_data(fn, {outputs[4]: "a status", outputs[6]: "a text"}, state))
    assert lean.config_values == {k: whole.config_values[k] for k in lean.config_values} and lean.config_values
    assert {c["id"]: c for c in lean.components} == {c["id"]: c for c in whole.components}  # a deep link's


def test_the_launched_app_keeps_its_sessions_lean() -> None:
    with Blocks() as demo:
        box = gr.Textbox()
        box.submit(str.upper, box, box, api_name="shout")
    demo.launch(prevent_thread_lock=True, quiet=True)
    try:
        assert type(demo.server_app.state_holder) is Sessions and demo.state_holder is demo.server_app.state_holder
        client = Client(demo.local_url, verbose=False)
        assert client.predict("hi", api_name="/shout") == "HI"  # its first event: the session is made
        assert type(demo.server_app.state_holder[client.session_hash]) is LeanSessionState
    finally:
        demo.close()


def _get(app: ConfigCache, path: str = "/config", query: bytes = b"", method: str = "GET",
         host: bytes = b"127.0.0.1:7860") -> list[dict]:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "query_string": query, "root_path": "",
             "headers": [(b"host", host)]}
    _run(app(scope, receive, send))
    return sent


@pytest.mark.parametrize("path", ["/config", "/"])
def test_the_page_and_its_config_are_asked_of_gradio_once_per_address(path: str) -> None:
    asked = []

    async def gradio(scope: dict, receive: object, send: object) -> None:
        asked.append((scope["path"], dict(scope["headers"])[b"host"]))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"root": "%s"}' % dict(scope["headers"])[b"host"]})

    app = ConfigCache(gradio)  # type: ignore[arg-type]
    first, again = _get(app, path), _get(app, path)
    assert again == first and len(asked) == 1
    assert _get(app, path, host=b"class.example.org")[1]["body"] == b'{"root": "class.example.org"}'
    assert len(asked) == 2
    for other in ({"query": b"lesson=3&present=1"}, {"method": "POST"}, {"path": "/gradio_api/info"}):
        _get(app, **{"path": path, **other})  # type: ignore[arg-type]
        _get(app, **{"path": path, **other})  # type: ignore[arg-type]
    assert len(asked) == 8  # each of those went to Gradio both times


def test_an_answer_that_sets_a_cookie_or_fails_is_not_kept() -> None:
    asked = []

    async def gradio(scope: dict, receive: object, send: object) -> None:
        asked.append(1)
        headers = [(b"set-cookie", b"a=b")] if len(asked) == 1 else []
        await send({"type": "http.response.start", "status": 200 if len(asked) <= 2 else 500, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    app = ConfigCache(gradio)  # type: ignore[arg-type]
    _get(app), _get(app), _get(app, host=b"other"), _get(app, host=b"other")
    assert len(asked) == 4  # the cookie's answer and the failure were each asked again


def test_the_pages_html_carries_the_frame_script_first_in_its_head_and_nothing_else_changes() -> None:
    """explorer/ui/frames.py: the page's HTML (in as many pieces as Gradio sends it) gets the script ahead of
    Gradio's own, with its length said again; the config's JSON and another path's page are left as they are."""

    async def gradio(scope: dict, receive: object, send: object) -> None:
        kind = b"application/json" if scope["path"] == "/config" else b"text/html; charset=utf-8"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", kind), (b"content-length", b"52")]})
        await send({"type": "http.response.body", "body": b"<html><head><script type=module src=x>",
                    "more_body": True})
        await send({"type": "http.response.body", "body": b"</script></head>"})

    app = TrackerFrames(gradio)  # type: ignore[arg-type]
    start, body = _get(app, "/", query=b"lesson=2")
    page = body["body"].decode()
    assert page.startswith(f"<html><head>{SCRIPT}<script type=module") and page.endswith("</head>")
    assert dict(start["headers"])[b"content-length"] == str(len(body["body"])).encode()
    for path in ("/config", "/gradio_api/info"):
        assert b"".join(m.get("body", b"") for m in _get(app, path)) == (
            b"<html><head><script type=module src=x></script></head>")
