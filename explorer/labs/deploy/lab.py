"""The deployment lab, end to end: each route in turn in the deployment worker (explorer/labs/deploy/job.py), its
row as soon as it is known."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.core.errors import InputError
from explorer.core.inputs import tokenize
from explorer.core.progress import Progress
from explorer.labs.deploy.job import RouteJob
from explorer.labs.deploy.results import DeployResult, RouteResult
from explorer.labs.deploy.routes import ROUTES
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import WorkerFailure
from models.config import config_dict


def run_deploy(service: WorkerProcess, model: str, config: object, text: str, lengths: list[int],
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
        except WorkerFailure as e:
            done.append(RouteResult(route, error=f"{type(e).__name__}: {e}"))
        # each route's row as soon as it is known (a slow route never hides the finished ones); the last is whole
        yield DeployResult(model, config_dict(config), tokens.text, len(tokens.ids[0]), list(done), routes[i + 1:])
