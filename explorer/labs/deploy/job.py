"""The deployment lab's job: one route at a time in the deployment worker (a compile worker of its own, so that
a slow export never holds up the Playground's compiles), each with its own timeout and a fresh directory."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch._dynamo as dynamo

from explorer.compile.protocol import CompileFailure, Job, WorkerContext
from explorer.compile.worker import CompileService
from explorer.core.errors import InputError
from explorer.core.inputs import tokenize
from explorer.core.limits import DEPLOY_TIMEOUT_S, MAX_ARTEFACT_BYTES, WORKER_JOBS
from explorer.core.progress import Progress
from explorer.labs.deploy.checks import check_inputs
from explorer.labs.deploy.results import DeployResult, RouteResult
from explorer.labs.deploy.routes import ROUTES, Setting
from explorer.sources.edited import model_of
from models.config import config_dict


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


_service: CompileService | None = None


def deploy_service() -> CompileService:
    """The process-wide deployment worker, started on first use."""
    global _service
    if _service is None:
        _service = CompileService(DEPLOY_TIMEOUT_S, name="deployment", max_jobs=int(WORKER_JOBS),
                                  advice="Try a smaller architecture, or leave out the slow route (aoti).")
    return _service


def run_deploy(service: CompileService, model: str, config: object, text: str, lengths: list[int],
               routes: list[str], out_dir: str, source: str = "") -> Iterator[Progress | DeployResult]:
    """Each route in turn, progress messages between and the result so far after each (the routes still to run
    named), the last one whole. A route that times out or crashes the worker is reported as a loud failure of that
    route; the worker is replaced and the next route runs. With `source`, the model is built from that edit of its
    file: `service` must then be the confined code worker."""
    assert not source or getattr(service, "confined", False), "edited code runs in the confined code worker only"
    if unknown := [r for r in routes if r not in ROUTES]:
        raise InputError(f"unknown route(s) {unknown}; routes are: {', '.join(ROUTES)}")
    tokens = tokenize(text)  # validated here, before any work in the worker
    done: list[RouteResult] = []
    for i, route in enumerate(routes):
        job = RouteJob(model, config_dict(config), tokens.text, tuple(lengths), route, out_dir, source)
        try:
            for item in service.run(job):
                if isinstance(item, Progress):
                    yield Progress(item.elapsed_s,
                                   f"Route {i + 1}/{len(routes)}, {route}: {item.phase}")
                else:
                    done.append(item)
        except CompileFailure as e:
            done.append(RouteResult(route, error=f"{type(e).__name__}: {e}"))
        # each route's row as soon as it is known (a slow route never hides the finished ones); the last is whole
        yield DeployResult(model, config_dict(config), tokens.text, len(tokens.ids[0]), list(done), routes[i + 1:])
