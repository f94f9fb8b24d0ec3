"""Hostile input over HTTP, sent as a client that owes the server nothing sends it (raw JSON, any type): every
parameter of every public endpoint given values of the wrong type, out of range, over-long or unknown (hypothesis
strategies per parameter type, from the same declarations that build the UI and the CLI), plus the cases found by
hand in issue 25. Each is refused with one line that names no path of the server, within 1 s, before any work; an
accepted value gives the right answer; afterwards the server's memory and processes are back where they began."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.api import ClaimRequest, InspectRequest, endpoint_parameters
from explorer.compile.options import BACKENDS, DYNAMIC_MODES
from explorer.core.examples import EXAMPLES
from explorer.core.limits import MAX_TEXT_CHARS, MAX_TOKENS
from explorer.labs.registry import LABS
from explorer.sources.registry import SOURCES
from models.config import Knob, knobs
from models.tokenizer import encode
from tests.app.conftest import SERVER_LOGS
from tests.helpers import ROOT, descendants

pytestmark = pytest.mark.slow  # on the process's shared app: no process or memory left by refused requests

MODEL = Knob("model", "choice", "rnn", "", choices=tuple(SOURCES))
CONFIG = Knob("config_json", "config", "{}", "")
TEXT = Knob("text", "text", "hi", "", most=int(MAX_TEXT_CHARS))


def _switch(name: str) -> Knob:
    return Knob(name, "bool", False, "")


def _lab(spec: Any) -> list[Knob]:
    by_name = {k.name: k for k in spec.knobs()} | {"model": MODEL, "config_json": CONFIG}
    return [by_name[p.name] for p in endpoint_parameters(spec)]


# What each public endpoint takes, in order: the labs' and /inspect's and /claim's from their declarations; the
# page's own events (which Gradio's components type) as the page declares them.
PARAMS: dict[str, list[Knob]] = {
    "inspect": [MODEL, CONFIG, *knobs(InspectRequest)],
    **{name: _lab(spec) for name, spec in LABS.items()},
    "claim": [*knobs(ClaimRequest), CONFIG],
    "edit": [MODEL, Knob("text", "text", "hi", "", most=int(MAX_TEXT_CHARS)),
             Knob("compare", "text", "", "", most=int(MAX_TEXT_CHARS)), CONFIG],
    "select_model": [Knob("name", "choice", "rnn", "", choices=tuple(SOURCES))],
    "example": [Knob("example", "choice", next(iter(EXAMPLES)), "", choices=tuple(EXAMPLES))],
    "compile": [Knob("enabled", "bool", True, ""), Knob("backend", "choice", "eager", "", choices=BACKENDS),
                Knob("dynamic", "choice", "auto", "", choices=tuple(DYNAMIC_MODES)), _switch("mark"),
                _switch("fullgraph")],
    "load": [],
    # a class's room: a code not open is refused first, so each of these checks the refusal's one line
    "room_open": [],
    "room_join": [Knob("code", "text", "ABCDE", "", most=12)],
    "room_answer": [Knob("code", "text", "ABCDE", "", most=12), Knob("student", "text", "x", "", most=64),
                    Knob("answer", "text", "3", "", most=40)],
    "room_view": [Knob("code", "text", "ABCDE", "", most=12), Knob("token", "text", "x", "", most=64)],
    "room_step": [Knob("code", "text", "ABCDE", "", most=12), Knob("teacher", "text", "x", "", most=64),
                  Knob("step", "int", 1, "", min=1, max=9)],
    "room_reveal": [Knob("code", "text", "ABCDE", "", most=12), Knob("teacher", "text", "x", "", most=64)],
}
PAGE_EVENTS = {"edit", "select_model", "example", "compile", "load"}
REQUIRED = {"text": "hi"}  # valid values where a declaration's default is not one a request may send


def _valid(k: Knob) -> Any:
    if k.name in REQUIRED and not k.default:
        return REQUIRED[k.name]
    return ",".join(map(str, k.default)) if isinstance(k.default, tuple) else k.default


NOT_TEXT = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                     st.lists(st.integers(), max_size=3),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
NOT_LIST = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
NOT_A_NUMBER = st.sampled_from(["nan", "inf", "-inf", "1e400", "9" * 400, "abc", "", "1,2", "0x10"])
SWITCH_WORDS = {"true", "false", "1", "0", "yes", "no"}


def _outside(k: Knob) -> st.SearchStrategy[Any]:
    """A number the knob refuses: out of its range, or not whole where it takes whole numbers."""
    lo, hi = k.min if k.min is not None else -float("inf"), k.max if k.max is not None else float("inf")
    ints = st.integers().filter(lambda i: not lo <= i <= hi)
    floats = st.floats(allow_nan=True, allow_infinity=True)
    if k.type == "int":
        floats = floats.filter(lambda f: not (f == f and abs(f) != float("inf") and f.is_integer() and lo <= f <= hi))
    else:
        floats = floats.filter(lambda f: not lo <= f <= hi)
    return st.one_of(ints, floats, ints.map(str))


def hostile(k: Knob, typed_by_the_page: bool = False) -> st.SearchStrategy[Any]:
    """Values of `k`'s declared type that it must refuse. The page's own events take their text through Gradio's
    text boxes, which make any value its text (None: empty): only an over-long one is refused there."""
    too_long = st.just("x" * ((k.most or int(MAX_TEXT_CHARS)) + 1))
    if k.type == "choice":
        return st.one_of(NOT_TEXT, st.text(max_size=100).filter(lambda t: t not in k.choices))
    if k.type == "text":
        return too_long if typed_by_the_page else st.one_of(NOT_TEXT, too_long)
    if k.type == "bool":
        return st.one_of(st.none(), st.integers(), st.floats(), st.lists(st.booleans(), max_size=2),
                         st.text(max_size=8).filter(lambda t: t.strip().lower() not in SWITCH_WORDS))
    if k.type in ("int", "float"):
        return st.one_of(st.none(), st.booleans(), st.lists(st.integers(), max_size=2), NOT_A_NUMBER, _outside(k))
    if k.type == "ints":
        return st.one_of(NOT_LIST, st.lists(st.integers(min_value=1, max_value=8), max_size=3).flatmap(
            lambda xs: _outside(k).map(lambda bad: ",".join(map(str, [*xs, bad])))))
    if k.type == "subset":
        return st.one_of(NOT_LIST, st.text(min_size=1, max_size=30).filter(
            lambda t: any(x.strip() and x.strip() not in k.choices for x in t.split(","))))
    assert k.type == "config"  # (None is no config: the model's defaults)
    return st.one_of(
        st.booleans(), st.integers(), st.lists(st.integers(), max_size=2),
        st.text(max_size=30).filter(lambda t: not _is_object(t)),
        st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda f: f not in {"seed"}), st.integers(),
                        min_size=1, max_size=2).map(json.dumps),
        st.sampled_from(["[" * 1000, '{"layers": ' + "9" * 309 + "}", '{"hidden": 1000000}', '{"a": {"b": {}}}',
                         "{" + '"x": 1, ' * 3000 + '"y": 1}']))


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def call(url: str, name: str, data: Any, timeout: float = 300) -> tuple[str, Any, float]:
    """POST /gradio_api/call/<name> and read its event stream: ("complete", output), ("error", message), or
    ("http <status>", body), with the seconds it took."""
    start = time.monotonic()
    request = urllib.request.Request(f"{url}gradio_api/call/{name}", data=json.dumps({"data": data}).encode(),
                                     headers={"content-type": "application/json"})
    try:
        event_id = json.load(urllib.request.urlopen(request, timeout=timeout))["event_id"]
    except urllib.error.HTTPError as e:
        return f"http {e.code}", json.loads(e.read() or b"null"), time.monotonic() - start
    with urllib.request.urlopen(f"{url}gradio_api/call/{name}/{event_id}", timeout=timeout) as stream:
        event = ""
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                return event, json.loads(line.removeprefix("data:")), time.monotonic() - start
    return "no answer", None, time.monotonic() - start


def _line(kind: str, payload: Any) -> str:
    """The refusal's message, however it came: an error event, a 422 naming the bad parameter, a 404."""
    if kind == "error" or (kind.startswith("http") and isinstance(payload, dict) and "error" in payload):
        return payload["error"] or ""
    if kind == "http 422" and isinstance(payload, dict) and isinstance(payload.get("detail"), list):
        return " / ".join(d["message"] for d in payload["detail"] if d.get("is_valid") is False)
    return ""


def refused(url: str, name: str, data: list[Any]) -> str:
    kind, payload, seconds = call(url, name, data)
    line = _line(kind, payload)
    assert kind != "complete", f"/{name} accepted {str(data)[:200]}"
    assert line and "\n" not in line and len(line) <= 400, (kind, str(payload)[:500])
    assert "Traceback" not in line and str(ROOT) not in line and "/tmp/" not in line, line
    assert seconds < 1.0, f"/{name} took {seconds:.2f} s to refuse {str(data)[:200]}"
    return line


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024


@pytest.fixture(scope="module")
def url(request, shared_app):
    """The process's shared app (tests/conftest.py), counted before and after this module; its log joins a failed
    test's report, as the browser modules' does."""
    SERVER_LOGS[request.module.__name__] = shared_app.log
    url, pid = shared_app.url, shared_app.proc.pid
    # Warm, and start the deployment worker the accepted cases below use.
    assert call(url, "inspect", [_valid(k) for k in PARAMS["inspect"]])[0] == "complete"
    assert call(url, "deploy", ["rnn", "{}", "hi", "5", "jit.trace"])[0] == "complete"
    processes, rss = len(descendants(pid)), _rss_mb(pid)
    yield url
    # Nothing a refused request did is left: no process more (a worker past its jobs is replaced: counted, not
    # named), no memory kept (a little for Gradio's caches).
    assert len(descendants(pid)) <= processes, (processes, descendants(pid))
    assert _rss_mb(pid) < rss + 64, (rss, _rss_mb(pid))


def test_the_suite_covers_every_public_endpoint_and_parameter(url):
    info = json.load(urllib.request.urlopen(f"{url}gradio_api/info"))["named_endpoints"]
    assert {path.lstrip("/"): [p["parameter_name"] for p in e["parameters"]] for path, e in info.items()} == \
        {name: [k.name for k in ks] for name, ks in PARAMS.items()}


@pytest.mark.parametrize(("name", "at"), [(n, i) for n, ks in PARAMS.items() for i in range(len(ks))],
                         ids=[f"{n}.{k.name}" for n, ks in PARAMS.items() for k in ks])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          derandomize=True)
@given(data=st.data())
def test_a_value_of_the_wrong_type_or_out_of_range_is_refused_in_one_line_within_a_second(url, name, at, data):
    values = [_valid(k) for k in PARAMS[name]]
    k = PARAMS[name][at]
    if name in PAGE_EVENTS and k.type == "config":  # a text box too
        values[at] = data.draw(st.text(max_size=30).filter(lambda t: t.strip() and not _is_object(t)), label=k.name)
    else:
        values[at] = data.draw(hostile(k, typed_by_the_page=name in PAGE_EVENTS), label=k.name)
    refused(url, name, values)


@pytest.mark.parametrize(("name", "at", "value", "said"), [
    ("inspect", 6, 10**7, "mark_dynamic must be true or false; got 10000000"),  # once multiplied a list
    ("inspect", 6, "x", "mark_dynamic must be true or false"),
    ("inspect", 7, -1, "fullgraph must be true or false"),
    ("inspect", 1, "[" * 1000, "config must be a flat JSON object"),
    ("inspect", 1, 5, "config must be a JSON object"),
    ("inspect", 1, '{"layers": ' + "9" * 309 + "}", "309 digits"),
    ("inspect", 0, ["rnn"], "unknown model ['rnn']"),
    ("inspect", 0, "m" * 1_000_000, "unknown model 'mmmm"),  # echoed back cut, not whole
    ("claim", 0, ["shape"], "claim must be one of"),
    ("claim", 0, "c" * 1_000_000, "claim must be one of"),
    ("claim", 1, "maybe", "again must be true or false"),
    ("claim", 2, "nope", "unknown model 'nope'"),
    ("claim", 2, "gpt2", "the shape claim's experiment compares models of the zoo chosen for it"),
    ("batch", 3, "nan", "n must be a finite number"),
    ("batch", 3, 2.5, "n must be a whole number"),
    ("batch", 3, None, "n must be a number"),
    ("batch", 9, "tvm", "backend must be one of"),  # before the eager half runs, not after it
    ("batch", 2, None, "lines must be text"),
    ("ddp", 3, 2.7, "world_size must be a whole number"),
    ("deploy", 3, None, "lengths must be a comma-separated list"),
    ("deploy", 4, 7, "routes must be a comma-separated list"),
    ("debug", 4, None, "modes must be a comma-separated list"),
    ("compile", 3, 10**7, "mark_dynamic must be true or false"),
    ("compile", 0, "x", "enabled must be true or false"),
])
def test_the_inputs_issue_25_found_are_refused_with_their_line(url, name, at, value, said):
    values = [_valid(k) for k in PARAMS[name]]
    values[at] = value
    line = refused(url, name, values)
    assert said in line and len(line) < 300, line


def test_a_call_by_name_reaches_only_documented_endpoints_with_all_their_values(url):
    for name in ("lambda", "lambda_4", "nope", "x" * 500):
        assert "the API's endpoints are /batch" in refused(url, name, [])
    assert "/inspect takes 8 value(s)" in refused(url, "inspect", ["rnn"])


def test_duplicates_in_a_list_run_once(url):
    deploy = [_valid(k) for k in PARAMS["deploy"]]
    deploy[PARAMS["deploy"].index(next(k for k in PARAMS["deploy"] if k.name == "routes"))] = "jit.trace," * 1000
    kind, out, _ = call(url, "deploy", deploy)
    assert kind == "complete" and [r["route"] for r in out[0]["routes"]] == ["jit.trace"]
    assert out[0]["routes"][0]["artefact"].startswith("/artefacts/")  # a download address, not a server path


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          derandomize=True)
@given(text=st.text(alphabet=st.characters(codec=None, exclude_categories=()), min_size=1, max_size=40))
def test_any_text_is_run_with_its_bytes_as_tokens_or_refused_in_one_line(url, text):
    kind, out, _ = call(url, "inspect", ["rnn", '{"hidden": 8, "embed": 8}', text, "", "", "auto", False, False])
    try:
        tokens = len(encode(text))
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 bytes to run
        assert kind != "complete" and "\n" not in _line(kind, out) and _line(kind, out)
        return
    assert kind == "complete", (kind, out)
    assert out[0]["tokens"] == min(tokens, MAX_TOKENS)
