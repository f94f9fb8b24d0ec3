"""The compile, for tlparse: the session's compiled inputs replayed in a fresh compile worker started with
`TORCH_TRACE` (torch's structured trace: every frame compiled, each recompile with its guard, graph breaks, the
FX, AOT and inductor graphs and the generated code, per compile id), then `tlparse` (pinned in requirements.txt)
building its HTML report from the log: what PyTorch's troubleshooting guide asks a bug report to attach. The
replay starts from a fresh dynamo, as the session's own compiles started from one (the worker resets dynamo for a
session), so its compile ids follow the session's timeline, unless dynamo's automatic-dynamic profile, shared by
the workers, has changed since and a first compile is now symbolic."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from explorer.compile.jobs import PlaygroundJob, PlaygroundReply
from explorer.core.errors import InputError
from explorer.core.fmt import format_bytes
from explorer.core.limits import MAX_ARTEFACT_BYTES
from explorer.core.progress import Progress
from explorer.runs.session import Session
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import run_said
from models.config import config_dict

TLPARSE = Path(sys.executable).with_name("tlparse")  # the wheel's binary, beside this interpreter
TLPARSE_TIMEOUT_S = 120.0
_ANCHOR = re.compile(r'<a id="\[(\d+/\d+)\]">')  # tlparse's index, one per compile id: <a id="[0/1]">


@dataclass(frozen=True)
class CompileReport:
    """A traced replay: the folder holding the raw log (`logs/`) and tlparse's report (`report/index.html`), the
    compile ids the replay's timeline shows, and each one's page in the report."""

    folder: Path
    compile_ids: tuple[str, ...]
    pages: dict[str, str]  # compile id ("0/1") -> its page, relative to report/

    @property
    def index(self) -> Path:
        return self.folder / "report" / "index.html"


def replay_job(session: Session) -> PlaygroundJob:
    """The session's inputs compiled so far with its latest run's model, config and compile options, in order."""
    run = session.last
    if run is None or run.compiled is None:
        raise InputError("compile the latest run first (the compiled side): the report replays its compiles")
    config, options = config_dict(run.config), run.compiled.options
    inputs = session.compile_track.inputs[session.compile_track.key(run.model, config, options)]
    return PlaygroundJob(f"{session.id}-traced", run.model, config, options, [], [list(t) for t in inputs])


def traced(job: PlaygroundJob, folder: Path) -> Iterator[Progress | CompileReport]:
    """`job` in a fresh worker with TORCH_TRACE set to `folder/logs`, then tlparse's report in `folder/report`:
    progress, then the report."""
    logs, report = folder / "logs", folder / "report"
    service = WorkerProcess(name="traced compile", env={"TORCH_TRACE": str(logs)}, max_jobs=1)
    try:
        reply: PlaygroundReply = yield from run_said(service, job, "compiling with TORCH_TRACE")
    finally:
        service.stop()
    yield Progress(0.0, "tlparse: building the report")
    run_tlparse(logs, report)
    ids = tuple(dict.fromkeys(e.compile_id for call in reply.calls for e in call.events))
    yield CompileReport(folder, ids, pages(report))


def run_tlparse(logs: Path, out: Path) -> None:
    """tlparse over the trace's log (one file per traced process), its report written to `out`."""
    files = sorted(logs.glob("*.log")) if logs.is_dir() else []
    if not files:
        raise InputError("the traced compile wrote no log: nothing compiled (an input the session had not compiled?)")
    done = subprocess.run([str(TLPARSE), str(files[-1]), "-o", str(out), "--overwrite", "--no-browser"],
                          capture_output=True, text=True, timeout=TLPARSE_TIMEOUT_S)
    if done.returncode != 0 or not (out / "index.html").exists():
        raise InputError(f"tlparse failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")


def pages(report: Path) -> dict[str, str]:
    """Each compile id's entry in tlparse's index (its anchor: the compile's graphs, guards and code are listed
    under it), by the id dynamo gives it ("0/1")."""
    index = (report / "index.html").read_text(encoding="utf-8", errors="replace")
    return {m[1]: f"index.html#[{m[1]}]" for m in _ANCHOR.finditer(index)}


def zipped(report: CompileReport) -> bytes:
    """The folder (the raw log and the report) as one zip, within the artefact limit."""
    with tempfile.TemporaryDirectory(prefix="graph-explorer-zip-") as tmp:
        data = Path(shutil.make_archive(str(Path(tmp) / "compile-report"), "zip", report.folder)).read_bytes()
    if len(data) > MAX_ARTEFACT_BYTES:
        raise InputError(f"the compile report is {format_bytes(len(data))} zipped, past this server's limit of "
                         f"{format_bytes(MAX_ARTEFACT_BYTES)} (GE_MAX_ARTEFACT_BYTES): compile fewer inputs")
    return data
