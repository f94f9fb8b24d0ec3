"""End to end: the real app in its own process, called over HTTP with gradio_client."""

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from bench.appserver import connect
from explorer.core.limits import MAX_TOKENS
from explorer.eager.capture import capture_run
from explorer.sources.userfile import load
from models import build_model, make_config
from models.tokenizer import to_ids
from tests.helpers import ROOT, early_exit_branch

pytestmark = pytest.mark.slow  # on the process's shared app (tests/app/conftest.py)


def _config(**values) -> str:
    """A model's config as /edit takes it: one JSON object of the fields that differ from the defaults."""
    return json.dumps(values)


def test_api_lists_the_documented_endpoints(app_url):
    api = connect(app_url).view_api(print_info=False, return_format="dict")
    assert {"/edit", "/select_model", "/example", "/load", "/compile", "/inspect", "/batch", "/deploy",
            "/debug", "/ddp", "/claim"} <= set(api["named_endpoints"])
    edit = [p["parameter_name"] for p in api["named_endpoints"]["/edit"]["parameters"]]
    assert edit == ["model", "text", "compare", "config_json"]  # named: the config as one object, as /inspect


def test_inspect_endpoint_returns_the_report(app_url):
    client = connect(app_url)
    report = client.predict("rnn", '{"layers": 2, "cell": "lstm"}', "Hello there", "Hi", api_name="/inspect")
    assert report["config"]["layers"] == 2 and report["config"]["cell"] == "lstm"
    assert report["trace"]["layers.1.fwd"] == 11
    model = build_model("rnn", make_config("rnn", {"layers": 2, "cell": "lstm"}))  # the same seed: same weights
    mine, theirs = (capture_run(model, to_ids(t)) for t in ("Hello there", "Hi"))
    assert report["graph"]["nodes"] == len(mine.graph.nodes)  # the server captured exactly this run's graph
    assert report["memory"]["saved_bytes"] == mine.saved_bytes
    assert report["diff"]["nodes_added"] - report["diff"]["nodes_removed"] == len(mine.graph.nodes) - len(
        theirs.graph.nodes)
    forward = report["eager"]["forward"]
    assert forward["min_ms"] <= forward["median_ms"] <= forward["max_ms"] and forward["runs"] >= 3
    assert report["memory"]["peak_train_bytes"] > report["memory"]["peak_forward_bytes"] > 0


@pytest.mark.parametrize(
    ("config", "text", "message"),
    [
        ('{"hidden": 100000}', "ab", "hidden must be between 4 and 512"),
        ('{"layers": 2', "ab", "config must be a JSON object"),
        ("[1, 2]", "ab", "config must be a JSON object"),
        ("{}", "", "empty"),
    ],
)
def test_inspect_endpoint_rejects_bad_input_with_a_message(app_url, config, text, message):
    with pytest.raises(Exception, match=message):
        connect(app_url).predict("rnn", config, text, "", api_name="/inspect")


HEAVIEST = '{"cell": "lstm", "hidden": 512, "embed": 512, "layers": 4, "bidirectional": true}'


@pytest.mark.slow
def test_the_heaviest_run_the_limits_allow_is_refused_or_stopped_at_the_bound_and_the_server_keeps_serving(app_url):
    """Once accepted and 88.6 s long, holding everyone. Its capture's estimate sits near GE_MAX_RUN_S (10-12 s on
    2-core machines): refused by the estimate on one machine, stopped at the bound or left untimed on another; each
    way the request ends with a message naming the bound (tests/eager: each way on its own, on any machine), and
    the server serves the next one."""
    client = connect(app_url)
    with pytest.raises(Exception, match=r"GE_MAX_RUN_S") as refused:
        client.predict("rnn", HEAVIEST, "x" * 512, "", api_name="/inspect")
    said = str(refused.value)
    assert ("would take about" in said and "measured on a 32-token prefix" in said) or "stopped after 10 s" in said \
        or "Not timed" in said, said
    assert client.predict("rnn", "{}", "next", "", api_name="/inspect")["tokens"] == 4


def test_session_history_grows_and_bad_input_keeps_it(app_url):
    client = connect(app_url)
    job = client.submit("tree", "ab", "", _config(), api_name="/edit")
    out = job.result()
    _, cards, history, diff, report, status, _opened = out
    assert report["run"] == 1 and report["tokens"] == 2
    assert "graph nodes" in cards and "Measured on " in status and "(cpu, core" in status
    # The graph comes in the first streamed output (with the cards of its counts) and is not sent again.
    graph = next(o[0] for o in job.outputs() if isinstance(o[0], dict) and o[0].get("plot"))
    drawn = json.loads(graph["plot"])
    assert "Autograd graph: " in drawn["layout"]["title"]["text"]
    # The tree is drawn as its parse tree (two leaves, the composition joining them), its word under the leaves.
    assert "as the parse tree" in drawn["layout"]["title"]["text"]
    assert any(t.get("mode") == "text" and t["text"] == ["ab"] for t in drawn["data"])
    assert json.loads(history["plot"])["data"][0]["x"] == [2]
    assert diff.startswith("First run")
    first_arch = report["arch"]
    out = client.predict("tree", "ab cd ef.", "", _config(hidden=8), api_name="/edit")
    report = out[4]
    assert report["run"] == 2 and report["config"]["hidden"] == 8
    series = json.loads(out[2]["plot"])["data"]
    assert series[0]["name"] == report["arch"] and series[0]["x"] == [9]  # the latest architecture comes first
    assert next(t for t in series if t["name"] == first_arch)["x"] == [2]  # and the first one is still drawn
    assert "hidden 64->8" in out[3]
    assert report["diff"]["label"].startswith("architecture change (hidden 64->8)")
    assert report["trace"]["compose"] == 8
    empty = client.predict("tree", "", "", _config(), api_name="/edit")  # a pause while retyping
    assert empty[5] == "**Not run**: The input is empty: type a sentence (any language, emoji welcome). The " \
                       "figures shown are still run 2's."
    with pytest.raises(Exception, match="512"):  # the slider's own range check, or the engine's
        client.predict("tree", "ab", "", _config(hidden=100000), api_name="/edit")
    out = client.predict("tree", "abc", "", _config(hidden=8), api_name="/edit")
    assert out[4]["run"] == 3 and out[4]["config"]["hidden"] == 8  # the session survived both errors
    again = client.predict("tree", "abc", "", _config(hidden=8), api_name="/edit")
    assert again[5].startswith("Run 3 is this input on this architecture")  # the same settled input is not run twice


def test_sessions_are_separate(app_url):
    a, b = connect(app_url), connect(app_url)
    ra = a.predict("rnn", "one", "", _config(), api_name="/edit")[4]
    rb = b.predict("transformer", "two", "", _config(layers=3), api_name="/edit")[4]
    ra2 = a.predict("rnn", "one more", "", _config(), api_name="/edit")[4]
    assert (ra["run"], rb["run"], ra2["run"]) == (1, 1, 2)
    assert rb["model"] == "transformer" and ra2["model"] == "rnn"


def test_compiled_view_through_the_ui_endpoints(app_url):
    client = connect(app_url)
    client.predict("transformer", "hello world", "", _config(layers=1), api_name="/edit")
    status, cards, timeline, breaks, plot, fx, code, report = client.predict(
        True, "eager", "auto", False, False, api_name="/compile")
    assert "Compiled with eager" in status and "speed-up vs eager" in cards
    assert report["compiled"]["forward"]["median_ms"] > 0
    assert [row[1] for row in timeline["data"]] == [11]
    assert "def forward" in code and "No graph breaks" in breaks
    curves = {t["name"]: t for t in json.loads(plot["plot"])["data"]}
    assert curves["eager"]["x"] == curves["compiled"]["x"] == [11]
    assert curves["compiled here"]["x"] == [11]  # the compile event is marked on the plot
    assert "Captured FX graph 0/0" in json.loads(fx["plot"])["layout"]["title"]["text"]


def test_inspect_with_compile_reports_the_graph_break_at_its_line(app_url):
    client = connect(app_url)
    report = client.predict("early_exit", "{}", "The cat sat on the mat.", "", "eager", "auto", False, False,
                            api_name="/inspect")
    assert report["compiled"]["graph_breaks"][0]["where"] == early_exit_branch()
    assert report["timeline"] and report["compiled"]["fallback"] is None
    # (a compile past its bound: tests/app/test_faults.py, on an app with a short one)


def test_an_operators_model_file_is_captured_in_a_worker_and_one_that_crashes_leaves_the_app_serving(app_url):
    client = connect(app_url)
    report = client.predict("image_cnn", '{"channels": 4}', "The cat sat.", "", api_name="/inspect")
    cnn = load(str(ROOT / "examples" / "image_cnn.py"))  # not added to this test process's menu
    mine = capture_run(cnn.build(cnn.config({"channels": 4})), to_ids("The cat sat."))
    assert report["graph"]["nodes"] == len(mine.graph.nodes) and report["arch"] == "image_cnn channels=4"
    with pytest.raises(Exception, match="compile worker died"):  # its capture ran in the worker, not the server
        client.predict("crashing", "{}", "x" * 60, "", api_name="/inspect")
    assert client.predict("crashing", "{}", "short", "", api_name="/inspect")["graph"]["nodes"] > 0


def test_batch_endpoint_runs_the_lab(app_url):
    client = connect(app_url)
    report = client.predict("transformer", '{"layers": 1, "width": 32}', "Hi.\nA longer sentence.\nMedium one.",
                            64, "zipf", 5, 300, 0, 8, "", api_name="/batch")
    assert report["sentences"] == 3 and report["config"]["width"] == 32
    by_name = {s["name"]: s for s in report["strategies"]}
    assert by_name["pad"]["agrees"] and by_name["pad"]["forward_ms"] > 0
    assert by_name["bucket"]["distinct_shapes"] == 3  # lengths 3, 19, 11 in buckets of 8 tokens
    assert not by_name["pack"]["supported"] and "recurrent models only" in by_name["pack"]["note"]
    # Ten sentences of ten lengths, 3 to 27 tokens, on a small RNN: short unrolls compile in about a second each.
    lines = "\n".join("ab" * n for n in range(2, 7)) + "\n" + "\n".join("abc" * n for n in (1, 3, 5, 7, 9))
    generated = client.predict("rnn", '{"hidden": 8, "embed": 8}', lines, 64, "zipf", 5, 300, 0, 16, "eager",
                               api_name="/batch")
    assert generated["sentences"] == 10 and len(set(generated["lengths"])) == 10
    compiled = {s["name"]: s["compiled"] for s in generated["strategies"] if s["supported"]}
    assert compiled["pad"]["forward_ms"] > 0 and compiled["bucket"]["forward_ms"] > 0
    # The unrolled RNN specializes on every length: the loop's 10 lengths pass the recompile limit (8),
    # and the figure is withheld instead of showing eager time as compiled.
    assert "recompile limit (8) hit" in compiled["loop"]["fallback"] and compiled["loop"]["forward_ms"] is None


@pytest.mark.parametrize(("args", "message"), [
    (("rnn", "{}", "", 0), "n must be between 1 and"),
    (("rnn", "{}", "", 8, "normal"), "distribution must be one of"),
    (("rnn", '{"hidden": 0}', "", 8), "hidden must be between"),
    (("rnn", "{}", "", 8, "zipf", 5, 300, 0, 0), "bucket_width must be between 1 and"),
])
def test_batch_endpoint_rejects_bad_input_with_a_message(app_url, args, message):
    with pytest.raises(Exception, match=message):
        connect(app_url).predict(*args, api_name="/batch")


def test_two_sessions_changing_architectures_at_once_never_see_each_others_data(app_url):
    import threading

    results, errors = {}, []

    def user(name, model, key, values):
        client = connect(app_url)
        try:
            reports = []
            for i, v in enumerate(values):
                out = client.predict(model, f"{name} {'x' * (3 + i)}", "", _config(**{key: v}),
                                     api_name="/edit")
                reports.append(out[4])
            results[name] = reports
        except Exception as e:  # surfaced below: a thread's failure would vanish otherwise
            errors.append(e)

    threads = [threading.Thread(target=user, args=("alice", "rnn", "hidden", [8, 16, 24])),
               threading.Thread(target=user, args=("bob", "transformer", "layers", [1, 2, 3]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name, model, key, values in (("alice", "rnn", "hidden", [8, 16, 24]), ("bob", "transformer", "layers",
                                                                                [1, 2, 3])):
        reports = results[name]
        assert [r["run"] for r in reports] == [1, 2, 3]  # each session counts only its own runs
        assert [r["config"][key] for r in reports] == values and {r["model"] for r in reports} == {model}
        assert all(r["text"].startswith(name) for r in reports)


def _raw_call(app_url: str, body: bytes) -> str:
    """POST a raw body to /inspect over Gradio's HTTP API and return the event stream of its result."""
    request = urllib.request.Request(app_url + "gradio_api/call/inspect", data=body,
                                     headers={"Content-Type": "application/json"}, method="POST")
    event_id = json.loads(urllib.request.urlopen(request, timeout=30).read())["event_id"]
    return urllib.request.urlopen(f"{app_url}gradio_api/call/inspect/{event_id}", timeout=60).read().decode()


def test_hostile_text_through_the_api(app_url):
    client = connect(app_url)
    report = client.predict("rnn", "{}", "\x00\x07tab\there\x1b[31m", "", api_name="/inspect")
    assert report["tokens"] == len(b"\x00\x07tab\there\x1b[31m")  # control characters are bytes too
    with pytest.raises(Exception, match="characters; the limit is"):
        client.predict("rnn", "{}", "x" * 3_000_000, "", api_name="/inspect")
    # A lone surrogate, which no client library will encode, sent as a JSON escape: a message, not a crash.
    stream = _raw_call(app_url, b'{"data": ["rnn", "{}", "abc\\ud800", "", "", "auto", false, false]}')
    assert "event: error" in stream and "lone surrogate" in stream
    # Bytes that are not UTF-8 at all: refused at the door, and the server keeps serving.
    with pytest.raises(urllib.error.HTTPError) as refused:
        _raw_call(app_url, b'{"data": ["rnn", "{}", "\xff\xfe", ""]}')
    assert 400 <= refused.value.code < 500
    assert client.predict("rnn", "{}", "still serving", "", api_name="/inspect")["tokens"] == 13


def _get_in_pieces(app_url: str, target: str) -> bytes:
    """A GET whose head reaches the server in several reads, as a long one does from a browser or over a network
    (h11, uvicorn's pure-Python parser, refused a head once more than 16 KiB of it had come in unfinished): the
    whole answer, to the server's close."""
    address = urllib.parse.urlsplit(app_url)
    head = f"GET {target} HTTP/1.1\r\nHost: {address.netloc}\r\nConnection: close\r\n\r\n".encode()
    with socket.create_connection((address.hostname, address.port), timeout=60) as sock:
        for piece in (head[:1000], head[1000:21_000], head[21_000:]):
            sock.sendall(piece)
            time.sleep(0.2)  # not for timing: only so the pieces are likelier read apart (either way must work)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_a_hand_made_link_too_long_for_the_app_gets_a_page_that_says_so(app_url):
    answer = _get_in_pieces(app_url, "/?model=rnn&text=" + "a" * 40_000)  # (past h11's 16 KiB, under 64 KiB)
    assert answer.startswith(b"HTTP/1.1 414 ") and b"Link too long" in answer and b"40,0" in answer
    # past the server's parser's 64 KiB request head, its own bare refusal (docs/operating.md says so)
    assert _get_in_pieces(app_url, "/?model=rnn&text=" + "a" * 70_000).startswith(b"HTTP/1.1 400 ")
    longest = "%F0%9F%98%80" * (MAX_TOKENS // 4)  # the token limit's bytes, each percent-encoded: a link's longest text
    with urllib.request.urlopen(app_url + "?model=rnn&text=" + longest, timeout=60) as ok:
        assert ok.status == 200


def test_deploy_endpoint_reports_each_route_and_refuses_bad_lengths(app_url):
    client = connect(app_url)
    report = client.predict("tree", "{}", "The cat sat on the mat.", "5", "jit.trace", api_name="/deploy")
    (trace,) = report["routes"]
    assert trace["outcome"] == "silently wrong" and trace["checks"][-1]["tokens"] == 23
    assert report["machine"]["device"] == "cpu"
    with pytest.raises(Exception, match="lengths must be between 1 and 512"):
        client.predict("tree", "{}", "x", "999", "", api_name="/deploy")


def test_debug_endpoint_runs_the_bug_in_each_mode(app_url):
    client = connect(app_url)
    report = client.predict("rnn", "{}", "nan_forward", "The cat sat on the mat.", "eager", api_name="/debug")
    (eager,) = report["modes"]
    assert not eager["failed"] and eager["grad_finite"] is False
    assert {n["method"] for n in report["nan"]} == {"detect_anomaly", "forward hooks", "dispatch mode"}
    with pytest.raises(Exception, match="bug must be one of shape, nan_forward"):
        client.predict("rnn", "{}", "typo", "x", "eager", api_name="/debug")


def test_ddp_endpoint_runs_a_scenario_in_processes_and_refuses_a_model_it_does_not_take(app_url):
    client = connect(app_url)
    report = client.predict("stragglers", "transformer", '{"layers": 1, "width": 32}', 2, 2, "aot_eager",
                            api_name="/ddp")
    assert report["states"] == [["finished", "finished"]] and report["world_size"] == 2
    assert report["verdict"].startswith("Round-robin sharding") and report["costs"][0]["samples"] == 2
    with pytest.raises(Exception, match="runs on early_exit, not transformer"):
        client.predict("unused", "transformer", "{}", 2, 2, "aot_eager", api_name="/ddp")


def test_claim_endpoint_runs_a_claim_and_refuses_an_unknown_one(app_url):
    client = connect(app_url)
    report = client.predict("shape", False, api_name="/claim")
    assert report["claim"] == "shape" and report["verdict"] == "holds"
    assert report["numbers"]["rnn_nodes_long"] > report["numbers"]["rnn_nodes_short"]
    assert report["machine"]["device"] == "cpu" and report["measured_at"] > 0
    again = client.predict("shape", False, api_name="/claim")
    assert again["measured_at"] == report["measured_at"]  # the server's recent result, not a second run
    with pytest.raises(Exception, match=r"claim must be one of shape, .*; got 'nope'"):
        client.predict("nope", False, api_name="/claim")


def test_the_page_config_is_built_once_per_address_and_says_that_address(app_url):
    """ConfigCache: a second visitor gets the first's config byte for byte; a page reached under another name (a
    proxy's) gets its own, naming that address; a deep link still goes to Gradio."""

    def config(headers: dict[str, str] | None = None, query: str = "") -> dict:
        request = urllib.request.Request(app_url + "config" + query, headers=headers or {})
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())

    first, again = config(), config()
    assert first == again and first["root"] == app_url.rstrip("/")
    proxied = config({"X-Forwarded-Host": "class.example.org", "X-Forwarded-Proto": "https"})
    assert proxied["root"] == "https://class.example.org"
    assert config()["root"] == app_url.rstrip("/")  # the proxy's answer was kept apart
    assert config(query="?deep_link=nonexistent")["components"] == first["components"]
    # the page itself: the same bytes, its config naming the address it was reached at
    pages = [urllib.request.urlopen(app_url, timeout=30).read() for _ in range(2)]
    assert pages[0] == pages[1] and app_url.rstrip("/").encode() in pages[0]
    assert b"class.example.org" in urllib.request.urlopen(urllib.request.Request(app_url, headers={
        "X-Forwarded-Host": "class.example.org", "X-Forwarded-Proto": "https"}), timeout=30).read()


def test_a_room_over_the_api_takes_answers_refuses_a_stranger_and_reveals_to_every_student(app_url):
    """The room's endpoints as a room's tools (and bench/room.py's students) call them: a teacher opens, students
    join and answer, a student cannot move or reveal, a bad answer is one line, the reveal reaches each student."""
    client = connect(app_url)
    room = client.predict(api_name="/room_open")
    code, teacher = room["code"], room["teacher"]
    students = [client.predict(code, api_name="/room_join")["student"] for _ in range(2)]
    client.predict(code, teacher, 8, api_name="/room_step")  # the DDP step: a choice
    seen = client.predict(code, students[0], "it raises an error", api_name="/room_answer")
    assert seen["step"] == 8 and seen["mine"] == "it raises an error" and seen["answered"] == 1
    with pytest.raises(Exception, match="Pick one of: it raises an error, every step completes"):
        client.predict(code, students[1], "it hangs", api_name="/room_answer")
    with pytest.raises(Exception, match="Only the room's teacher"):
        client.predict(code, students[1], api_name="/room_reveal")
    with pytest.raises(Exception, match="No room 'ZZZZZ' is open on this server"):
        client.predict("ZZZZZ", api_name="/room_join")
    revealed = client.predict(code, teacher, api_name="/room_reveal")
    assert revealed["revealed"] and revealed["distribution"]["counts"] == [1, 0]
    for s in students:
        view = client.predict(code, s, api_name="/room_view")
        assert view["revealed"] and view["distribution"] == revealed["distribution"]
        assert view["measured"] == revealed["measured"]  # the same answer on every page, measured or not
