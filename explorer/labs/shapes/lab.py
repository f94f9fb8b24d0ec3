"""The shapes lab, end to end: the job in a fresh worker process (dynamo's caches are the process's: a prediction
reads this model's graphs only), its progress passed on, then its result."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.compile.options import require_backend
from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.labs.shapes.checked import parsed
from explorer.labs.shapes.job import OUTPUT_SHAPES, SCALAR_OUTPUTS, ShapesJob
from explorer.labs.shapes.predict import FROM_THE_START, STANCES
from explorer.labs.shapes.results import ShapesResult
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import Workers, run_said

SHAPES_TIMEOUT_S = 600.0  # eight compiles at most (the recompile limit), then every request run once


def run_shapes(workers: Workers, job: ShapesJob) -> Iterator[Progress | ShapesResult]:
    """`job` in a fresh worker process (or the compile worker of a notebook's kernel), refused first, in one line,
    where its settings contradict each other."""
    require_backend(job.options.backend)
    if unknown := set(job.switches) - {SCALAR_OUTPUTS, OUTPUT_SHAPES}:
        raise InputError(f"unknown switch(es) {sorted(unknown)}")
    if job.stance not in STANCES:
        raise InputError(f"stance must be one of {', '.join(STANCES)}; got {job.stance!r}")
    if job.stance in FROM_THE_START and len(job.compiled_at) < 2:
        raise InputError(f"stance {job.stance} runs the first call eagerly and compiles the second: give two lengths "
                         "to compile at")
    if job.unbacked and job.options.mark_dynamic:
        raise InputError("mark the length dynamic or unbacked, not both")
    if job.check is not None:
        parsed(job.check.expression)  # its line is read where the model is built
    runner = (WorkerProcess(SHAPES_TIMEOUT_S, name="shapes", max_jobs=1,
                            advice="Ask for fewer requests, shorter lengths, or backend eager.")
              if workers.fresh else workers.compile)
    try:
        result = yield from run_said(runner, job, "the shapes lab")
    finally:
        if runner is not workers.compile:
            runner.stop()
    yield result
