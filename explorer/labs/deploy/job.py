"""The deployment lab's job: one route at a time in the deployment worker (a compile worker of its own, so that
a slow export never holds up the Playground's compiles), each with its own timeout and a fresh directory."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch._dynamo as dynamo

from explorer.core.limits import DEPLOY_TIMEOUT_S, MAX_ARTEFACT_BYTES, WORKER_JOBS
from explorer.labs.contract import OwnWorker
from explorer.labs.deploy.checks import check_inputs
from explorer.labs.deploy.results import RouteResult
from explorer.labs.deploy.routes import ROUTES, Setting
from explorer.sources.edited import model_of
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import Job, WorkerContext


@dataclass(frozen=True)
class RouteJob(Job[RouteResult]):
    model: str
    config: dict
    text: str
    lengths: tuple[int, ...]
    route: str
    out_dir: str  # where a downloadable artefact is copied (the job's own directory is removed); "": nowhere
    source: str = ""  # the model's file as edited in the Code tab: built from it (in the confined code worker only)

    def run(self, ctx: WorkerContext) -> RouteResult:
        ctx.held = None  # export resets dynamo's state: nothing compiled earlier stays valid here
        dynamo.reset()
        model = model_of(self.model, self.config, self.source)
        inputs = check_inputs(self.model, model, self.text, list(self.lengths))
        with tempfile.TemporaryDirectory(prefix="graph-explorer-deploy-") as work:
            result = ROUTES[self.route](Setting(model, inputs, Path(work), ctx.phase))
            if result.artefact:
                result.artefact = _copy_out(Path(result.artefact), self.out_dir, result)
            if result.report:
                result.report = _copied(Path(result.report), self.out_dir)
        dynamo.reset()
        return result


def _copy_out(artefact: Path, out_dir: str, result: RouteResult) -> str:
    if (result.artefact_bytes or 0) > MAX_ARTEFACT_BYTES:
        result.notes.append(f"the artefact ({result.artefact_bytes:,} bytes) is past the download limit "
                            f"({MAX_ARTEFACT_BYTES:,}; GE_MAX_ARTEFACT_BYTES)")
        return ""
    return _copied(artefact, out_dir)


def _copied(file: Path, out_dir: str) -> str:
    """`file` copied to `out_dir` (the job's own directory is removed), or "" where there is none to keep it."""
    if not out_dir:
        return ""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return str(shutil.copy2(file, Path(out_dir) / file.name))


_service: WorkerProcess | None = None


def deploy_service() -> WorkerProcess:
    """The process-wide deployment worker, started on first use."""
    global _service
    if _service is None:
        _service = WorkerProcess(DEPLOY_TIMEOUT_S, name="deployment", max_jobs=int(WORKER_JOBS),
                                  advice="Try a smaller architecture, or leave out the slow route (aoti).")
    return _service


WORKER = OwnWorker("deploy", deploy_service)  # the lab's own worker (explorer/labs/contract.py)
