"""Take-away files: a session's measurements as CSV, and a self-contained HTML report.

The HTML report carries plotly.js inline (it opens offline, e.g. on a classroom laptop), the configs that
ran, and the machine the figures were measured on."""

from __future__ import annotations

import atexit
import csv
import html
import io
import itertools
import json
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from explorer.artefacts.notebook import reproduction_notebook
from explorer.artefacts.perfetto import checked_size, latest_run_job
from explorer.artefacts.script import reproducible, reproduction_script
from explorer.artefacts.tlparse import replay_job, traced, zipped
from explorer.core import limits, machine
from explorer.core.errors import USER_ERRORS
from explorer.core.fmt import format_bytes
from explorer.draw.style import Figure
from explorer.labs.batching import lab_lengths_figure, lab_time_figure, lab_waste_figure
from explorer.runs.session import Session
from explorer.serving.shared import run_key
from explorer.views.costs import LINE_COLUMNS, NODE_COLUMNS, ROLLUP_COLUMNS
from explorer.views.figures import compiled_figure, graph_figure, history_figure
from explorer.views.lines import BRANCH_COLUMNS, LINES_COLUMNS, branch_rows, lines_rows, lines_summary
from explorer.views.playground import costs_view
from explorer.views.report import build_report
from explorer.workers.protocol import JobRunner

CSV_COLUMNS = ["run", "model", "arch", "tokens", "graph_nodes", "forward_median_ms", "forward_iqr_ms",
               "forward_runs", "train_step_median_ms", "train_step_iqr_ms", "train_step_runs",
               "peak_forward_bytes", "peak_train_bytes", "threads", "device"]


def session_csv(session: Session) -> str:
    """One row per run of the session's history (the history plot's data), with its spread."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for r in session.history:
        writer.writerow([r.number, r.model, r.arch, r.tokens, r.nodes, f"{r.forward.median_ms:.6f}",
                         f"{r.forward.iqr_ms:.6f}", r.forward.runs, f"{r.train_step.median_ms:.6f}",
                         f"{r.train_step.iqr_ms:.6f}", r.train_step.runs,
                         r.memory.forward if r.memory else "", r.memory.train if r.memory else "",
                         r.forward.threads, "cpu"])
    return out.getvalue()


def _figure_html(fig: Figure, first: bool) -> str:
    return fig.to_html(full_html=False, include_plotlyjs="inline" if first else False,
                       config={"displaylogo": False})


def _table(rows: list[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows) \
        + "</table>"


def _grid(columns: list[str], rows: list[list[object]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _python_views(session: Session) -> tuple[list[str], list[Figure]]:
    """The lines that ran, which way each branch went and, if it was profiled, where the time went: for the input
    on screen when it is the latest run's (the lines recorded now if they were not: a pass of milliseconds)."""
    shown, r = session.shown, session.last
    if shown is None or r is None or shown.key != run_key(r.model, r.config, r.input.text):
        return [], []
    try:
        lines, forks = session.lines(), session.branches()
    except USER_ERRORS:
        return [], []
    said = lines_summary(lines, shown.fixed.capture.graph).replace("**", "").split(" Pick a line")[0]
    parts = [f"<h2>Lines that ran</h2><p>{html.escape(said)}</p>" + _grid(LINES_COLUMNS, lines_rows(lines)),
             "<h2>Which way each branch went</h2>" + _grid(BRANCH_COLUMNS, branch_rows(forks))]
    costs = session.costs_shown()
    if costs is None:
        return parts, []
    view = costs_view(session, costs)
    tables = _grid(LINE_COLUMNS, view.lines) + _grid(ROLLUP_COLUMNS, view.modules) + _grid(NODE_COLUMNS, view.top)
    parts.append(f"<h2>Where the time went</h2><p>{html.escape(view.said.replace('**', ''))}</p>{tables}")
    return parts, [view.graph]


_STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f5f5f5}pre{background:#f7f7f7;padding:1em;overflow:auto}h2{margin-top:2em}"""


def html_report(session: Session) -> str:
    """The session as one self-contained page: latest run, its graph, history, compiled side, batching lab, the
    Code tab's last edit that ran."""
    here = machine.this_machine()
    m = here.as_dict()
    parts = [f"<h1>Graph Explorer report</h1><p>Generated {time.strftime('%Y-%m-%d %H:%M:%S')}. Every figure "
             f"was measured on {html.escape(here.line())} ({here.cores} cores), Python {here.python}: medians with "
             "their IQR.</p>"]
    figures: list[Figure] = []
    r = session.last
    if r is not None:
        report = build_report(r, session.compile_track)
        fw, tr = r.forward, r.train_step
        parts.append("<h2>Latest run</h2>" + _table([
            ("model", f"{r.model} ({r.arch})"), ("config", json.dumps(report["config"])),
            ("input", f"{r.input.text!r} ({r.tokens} tokens)"),
            ("graph", f"{len(r.capture.graph.nodes)} nodes, {len(r.capture.graph.edges)} edges"),
            ("forward", str(fw)),
            ("train step", str(tr)),
            ("saved for backward", format_bytes(r.capture.saved_bytes)),
            ("peak memory (train step)", format_bytes(r.memory.train if r.memory else None)),
        ]))
        figures += [graph_figure(r)]
        if session.compile_track.runs:
            figures.append(compiled_figure(session.compile_track.runs))
        parts.append("<details><summary>raw report (JSON)</summary><pre>"
                     + html.escape(json.dumps(report, indent=1, ensure_ascii=False)) + "</pre></details>")
        views, drawn = _python_views(session)
        parts += views
        figures += drawn
    if session.history:
        figures.append(history_figure(session.history))
    lab = session.labs.get("batch")
    if lab is not None:
        parts.append(f"<h2>Batching lab</h2><p>{html.escape(lab['arch'])}: {lab['sentences']} sentences, "
                     f"{lab['tokens']} tokens. {html.escape(lab['verdict'].replace('**', ''))}</p>")
        figures += [lab_lengths_figure(lab), lab_time_figure(lab), lab_waste_figure(lab)]
    edit = session.labs.get("code")
    if edit is not None:
        parts.append("<h2>Code edit</h2>" + _table([
            ("model", edit["model"]), ("input", repr(edit["input"])),
            ("graph", f"{edit['nodes']} nodes, {edit['edges']} edges"),
            ("forward", edit["forward"] or "not timed")]) + f"<pre>{html.escape(edit['edit'])}</pre>")
    parts += [_figure_html(f, i == 0) for i, f in enumerate(figures)]
    if not figures:
        parts.append("<p>No runs yet.</p>")
    parts.append("<h2>Machine and limits</h2>" + _table([(k, str(v)) for k, v in {**m, **limits.describe()}.items()]))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Graph Explorer report</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>")


class ExportDir:
    """Where the app writes download files: one private directory, pruned to the newest `keep` files, a session's
    files removed with the session (`forget`), and all of it at exit (Gradio copies what it serves into its own
    cache)."""

    def __init__(self, keep: int = 64) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="graph-explorer-export-"))
        self.keep = keep
        self._counter = itertools.count()
        self._owned: dict[str, list[Path]] = {}  # a session's id -> the files and folders written for it
        self._lock = threading.Lock()
        self._closed = False
        atexit.register(self.remove)

    def remove(self, tries: int = 50) -> None:
        """Remove the directory (at exit): no file or job directory is made after this starts, and one being written
        meanwhile (a lab's thread still running at a SIGTERM) is outlasted, not left behind by a removal that met a
        file it had not listed."""
        with self._lock:
            self._closed = True
        for _ in range(tries):
            shutil.rmtree(self.path, ignore_errors=True)
            if not self.path.exists():
                return
            time.sleep(0.1)

    def _new(self, path: Path) -> Path:
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is stopping: no download is written any more")
        return path

    def write(self, session: Session) -> list[str]:
        """The session's CSV and HTML report as files, and, where its latest run can be rebuilt as code, the script
        and the notebook that reproduce it; returns their paths."""
        files = [("session.csv", session_csv(session)), ("report.html", html_report(session))]
        if reproducible(session):
            files += [("run.py", reproduction_script(session)), ("run.ipynb", reproduction_notebook(session))]
        return [self.save(name, text.encode("utf-8"), session.id) for name, text in files]

    def save(self, name: str, data: bytes, owner: str = "") -> str:
        """One file of `data`, its `name` after a stamp, kept for session `owner` (if any); returns its path. The
        oldest files beyond `keep` are removed."""
        path = self._new(self.path / f"graph-explorer-{time.strftime('%Y%m%d-%H%M%S')}-{next(self._counter)}-{name}")
        path.write_bytes(data)
        self._own(owner, path)
        files = [p for p in self.path.iterdir() if p.is_file()]
        for old in sorted(files, key=lambda p: p.stat().st_mtime)[:-self.keep]:
            old.unlink(missing_ok=True)
        return str(path)

    def job_dir(self, keep: int = 8, owner: str = "") -> str:
        """A fresh directory for one job's downloads (the deployment lab's artefacts, a compile report), kept for
        session `owner` (if any); the oldest beyond `keep` are removed."""
        path = self._new(self.path / f"job-{time.strftime('%Y%m%d-%H%M%S')}-{next(self._counter)}")
        path.mkdir()
        self._own(owner, path)
        dirs = [p for p in self.path.iterdir() if p.is_dir()]
        for old in sorted(dirs, key=lambda p: p.stat().st_mtime)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
        return str(path)

    def _own(self, owner: str, path: Path) -> None:
        if owner:
            with self._lock:
                self._owned.setdefault(owner, []).append(path)

    def forget(self, owner: str) -> None:
        """Remove what was written for session `owner` (its tab closed, or its state expired)."""
        with self._lock:
            paths = self._owned.pop(owner, [])
        for path in paths:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def perfetto_file(exports: ExportDir, session: Session, runner: JobRunner) -> str:
    """The latest run's Perfetto trace, profiled on `runner` (the session's compile worker), as a download."""
    *_, trace = runner.run(latest_run_job(session))
    return exports.save("perfetto.json.gz", checked_size(trace), session.id)


@dataclass(frozen=True)
class TlparseFiles:
    """The report zipped with its log (a download), and the timeline's rows, each with its compile id's entry in
    the report as kept in the export directory (a path under it, for the browser), or "" if it has none."""

    zip: str
    rows: list[tuple[str, int, str, str]]  # compile id, input length, why it compiled, its page


def tlparse_files(exports: ExportDir, session: Session) -> TlparseFiles:
    """The session's compiles replayed with TORCH_TRACE, tlparse's report kept in a job directory of the export
    directory (its pages are read in the browser) and zipped with the log."""
    replayed = replay_job(session)  # refused before any directory is made: nothing compiled yet
    job = Path(exports.job_dir(owner=session.id))
    *_, report = traced(replayed, job)
    run = session.last
    assert run is not None and run.compiled is not None  # replay_job refused otherwise
    shown = [t.event for t in session.compile_track.timeline
             if t.arch == run.arch and t.options == run.compiled.options.label()]
    rows = [(e.compile_id, e.length, e.reason,
             f"{job.name}/report/{report.pages[e.compile_id]}" if e.compile_id in report.pages else "")
            for e in shown]
    return TlparseFiles(exports.save("tlparse.zip", zipped(report), session.id), rows)
