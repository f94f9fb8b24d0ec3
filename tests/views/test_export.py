"""Take-away reports and state links: the HTML opens with its figures, the CSV parses, links round-trip."""

import io
import re
import threading
from pathlib import Path
from urllib.parse import parse_qsl

import pandas as pd
import pytest

from explorer.core import limits, machine
from explorer.core.errors import InputError
from explorer.labs.batching.lab import eager_lab
from explorer.runs.session import Session
from explorer.serving.statelink import LinkState, read_link
from explorer.sources.registry import subject
from explorer.views.export import CSV_COLUMNS, ExportDir, html_report, session_csv
from models import make_config
from models.config import config_dict
from tests.helpers import cli


@pytest.fixture(scope="module")
def session():
    s = Session()
    s.run("hello")
    s.configure("rnn", {"cell": "lstm", "hidden": 16})
    s.run("a longer sentence, here")
    *_, lab = eager_lab(subject("rnn", {"cell": "lstm", "hidden": 16}), ["ab", "abcdef"], 4, budget_scale=0.05)
    s.labs["batch"] = lab.report()  # as the lab's tab keeps it
    return s


def test_csv_parses_with_pandas_and_matches_the_history(session):
    df = pd.read_csv(io.StringIO(session_csv(session)))
    assert list(df.columns) == CSV_COLUMNS and len(df) == 2
    assert df["tokens"].tolist() == [5, 23] and df["arch"].tolist() == ["rnn", "rnn cell=lstm hidden=16"]
    assert (df["forward_median_ms"] > 0).all() and (df["forward_iqr_ms"] >= 0).all()
    assert (df["peak_train_bytes"] > 0).all()  # every run is profiled with its timings
    assert set(df["device"]) == {"cpu"} and (df["threads"] >= 1).all()


def test_html_report_is_self_contained_with_every_figure(session):
    page = html_report(session)
    assert page.startswith("<!doctype html>") and "</html>" in page
    assert page.count("Plotly.newPlot(") == 5  # graph, history, and the lab's three
    assert len(page) > 3_000_000 and not re.search(r"<script[^>]+src=", page)  # plotly.js inline, no fetches
    for needle in ("Latest run", "rnn cell=lstm hidden=16", "Batching lab", "Machine and limits",
                   machine.describe()["cpu"], "max_tokens"):
        assert needle in page


def test_html_report_carries_the_lines_the_branches_and_where_the_time_went():
    s = Session()
    s.configure("early_exit", {"threshold": 0.9})
    s.run("zzzz zzzz zzzz")
    assert "Where the time went" not in html_report(s)  # not profiled: not in the report
    s.costs()
    page = html_report(s)
    assert page.count("Plotly.newPlot(") == 3  # the graph, the history, the graph coloured by time
    for needle in ("<h2>Lines that ran</h2>", "<h2>Which way each branch went</h2>", "not taken, decided by data",
                   "<h2>Where the time went</h2>", "The train step profiled in a pass of its own (5 repeats"):
        assert needle in page, needle


def test_export_dir_writes_every_file_and_prunes(session, tmp_path):
    exports = ExportDir(keep=2)
    paths = exports.write(session)
    assert [p.rsplit(".", 1)[1] for p in paths] == ["csv", "html", "py", "ipynb"]  # a zoo model's run: as code too
    exports.write(session)
    assert len(list(exports.path.iterdir())) == 2  # the newest two files only


def test_a_sessions_files_go_with_it_and_no_one_elses(session):
    exports = ExportDir()
    mine, job = exports.write(session), exports.job_dir(owner=session.id)
    other = exports.save("step-1.ipynb", b"{}", "another session")
    exports.forget(session.id)
    assert [p.name for p in exports.path.iterdir()] == [Path(other).name]  # its files and its job folder gone
    assert mine and not Path(job).exists()


def test_the_exits_removal_outlasts_a_job_still_writing_and_refuses_new_files():
    """A SIGTERM while a lab's thread writes its artefacts: the removal at exit leaves nothing (one pass of rmtree
    that met a file it had not listed left the directory, seen in the suite), and nothing new is made after it."""
    exports = ExportDir()
    job = Path(exports.job_dir())
    started = threading.Event()

    def writing() -> None:  # a lab's thread writing its artefacts, stopping at its first failed write
        for i in range(400):
            try:
                (job / f"artefact-{i}.onnx").write_bytes(b"x" * 1000)
            except OSError:
                return
            started.set()

    writer = threading.Thread(target=writing)
    writer.start()
    started.wait(5)
    exports.remove()
    writer.join(10)
    assert not exports.path.exists()
    with pytest.raises(RuntimeError, match="the server is stopping"):
        exports.job_dir()


def test_cli_writes_html_and_csv(tmp_path):
    html, csv = tmp_path / "r.html", tmp_path / "r.csv"
    out = cli("inspect", "--model", "tree", "--text", "ab cd.", "--html", str(html), "--csv", str(csv))
    assert out.returncode == 0, out.stderr
    assert "Plotly.newPlot(" in html.read_text() and len(pd.read_csv(csv)) == 1
    bad = cli("inspect", "--model", "tree", "--text", "x", "--html", str(tmp_path / "missing" / "r.html"))
    assert bad.returncode == 2 and "cannot write" in bad.stderr


def test_state_link_round_trips():
    config = config_dict(make_config("transformer", {"layers": 3, "attention": "sdpa"}))
    state = LinkState("transformer", config, "Hand this out: 📈 граф", compile=True, backend="eager",
                      dynamic="false", mark_dynamic=True)
    query = state.query()
    assert "layers=3" in query and "width" not in query  # defaults are left out
    assert read_link(dict(parse_qsl(query[1:]))) == state
    assert read_link({}) is None


@pytest.mark.parametrize(("params", "message"), [
    ({"text": "x"}, "no model"),
    ({"model": "gpt"}, "unknown model"),
    ({"model": "rnn", "hidden": "1e9"}, "hidden must be between"),
    ({"model": "rnn", "depth": "2"}, "unknown config field"),
    ({"model": "rnn", "backend": "tvm"}, "backend must be one of"),
    ({"model": "rnn", "compile": "maybe"}, "compile must be 1 or 0"),
    ({"model": "rnn", "text": "x" * 300_000}, "characters; the limit is"),
])
def test_a_bad_state_link_is_refused_with_a_message(params, message):
    with pytest.raises((InputError, ValueError), match=message):
        read_link(params)


def test_a_link_carries_only_the_text_that_runs():
    state = LinkState("rnn", config_dict(make_config("rnn")), "é" * 100_000)
    text = dict(parse_qsl(state.query()[1:]))["text"]
    assert len(text.encode()) <= limits.MAX_TOKENS and text == "é" * (limits.MAX_TOKENS // 2)
