"""What one server holds for every session, and its start-up: the bound on built models, the download files,
the claims' board, and the one-time costs paid before the first click. Gradio-free: `explorer/ui` serves it."""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading

from explorer.api import background_workers, stop_background_workers
from explorer.claims.board import ClaimBoard, claims_file, keep_fresh
from explorer.claims.board import warm as warm_claims
from explorer.claims.room import Rooms
from explorer.compile.warmup import warm_compile_cache
from explorer.core import limits
from explorer.core.machine import keep_off_measure_cores, limit_malloc_arenas, pin_threads
from explorer.core.queues import Queue
from explorer.eager.memory import warm_profiler
from explorer.serving.background import wait_for_visitors
from explorer.serving.placement import measure_pool
from explorer.serving.residency import Residency
from explorer.sources.registry import warm_param_count
from explorer.views.export import ExportDir
from explorer.workers.process import WorkerProcess, stop_every_worker

log = logging.getLogger("graph_explorer")
SESSION_TTL_S = 1800  # a session's state is dropped after this long without use (its model much sooner)
# Events that measure may all be in flight: they wait their turn in explorer.serving.queueing (which shows the wait
# and refuses past its limit) rather than invisibly in Gradio's queue.
MEASURE_EVENTS = limits.MAX_QUEUE + 1
RESIDENCY = Residency(limits.MAX_LIVE_MODELS)  # built models kept across every session of this server
EXPORTS = ExportDir()  # download files: session reports, deployment artefacts


@atexit.register  # (registered after the workers' module and the directory: run before their own exit handlers)
def _at_exit() -> None:
    """The workers first, then the download directory: a deployment worker still copying a lab's artefact into its
    job directory made the directory again after its removal (a SIGTERM during a lab left it, seen in the suite)."""
    stop_every_worker()
    EXPORTS.remove()


# Each claim's latest result, shown to every visitor of this server for a while, and kept on disk across restarts.
# GE_QUICK_CLAIMS=1 runs the reduced experiments instead (tests): every card then says so.
CLAIM_BOARD = ClaimBoard(path=claims_file(), quick=os.environ.get("GE_QUICK_CLAIMS") == "1")
ROOMS = Rooms()  # the classes' rooms open on this server (in memory: a restart ends them)


def claim_numbers(claim_id: str) -> dict[str, float] | None:
    """The numbers of this server's recent result of a claim (what a room's reveal reads), None if it has none."""
    result = CLAIM_BOARD.cached(claim_id)
    return result.evidence.numbers if result is not None else None


# Where code edited in the browser runs (the Code tab, only where the operator allows it): walled in, one job at a time.
CODE_WORKER = WorkerProcess(timeout_s=limits.CODE_TIMEOUT_S, name="code", confined=True,
                             advice="Undo the edit, or make what it runs end sooner.")


def concurrency(queue: str) -> int:
    """How many events of a queue run at once: every measuring one (they wait their turn in the measurement
    queue, which shows the wait), one of each worker's."""
    return MEASURE_EVENTS if queue == Queue.MEASURE.value else 1


def prepare_process() -> None:
    """Before any thread exists: cap malloc's arenas, keep this process off the measuring cores, log, and end on a
    SIGTERM (a container's stop, a supervisor's) as on Ctrl-C: its exit handlers stop the workers and remove
    every temporary directory, where the default action would leave them all."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    limit_malloc_arenas()
    keep_off_measure_cores()  # every server thread and the compile worker inherit this; timings move over
    logging.basicConfig(level=logging.INFO)


def start_background_work() -> None:
    """Pay one-time costs off the first click: the profiler, the meta device, inductor's toolchain."""
    pin_threads()
    warm_profiler()
    log.info("claims restored from %s: %s", CLAIM_BOARD.path, CLAIM_BOARD.restore() or "none")
    try:
        pool = measure_pool()  # on Ray, a cluster too small for the pools stops the launch with the reason
    except RuntimeError as e:
        raise SystemExit(f"Graph Explorer cannot start: {e}") from None
    threading.Thread(target=pool.start, daemon=True, name="measurement-warm-up").start()
    # The first parameter count on the meta device imports torch's reference ops (seconds): not on a first click.
    threading.Thread(target=warm_param_count, daemon=True, name="meta-warm-up").start()
    threading.Thread(target=_warm_up, daemon=True, name="warm-up").start()


def _warm_up() -> None:
    """Inductor's caches (GE_WARM_COMPILE), then every claim's result on the board (GE_WARM_CLAIMS), one after the
    other in the background: the claims' compiles then hit the warm caches. All of it yields to visitors
    (explorer/serving/background.py): this thread and its workers at the lowest scheduling priority, each step
    waiting while a visitor's run waits for the measuring core."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # this thread only (its claims' in-process work)
    background = background_workers()
    try:
        if os.environ.get("GE_WARM_COMPILE", "1") != "0":
            log.info("compile cache warm: %s", warm_compile_cache(background.compile, wait_for_visitors))
        if os.environ.get("GE_WARM_CLAIMS", "1") != "0":
            log.info("claims measured: %s", warm_claims(CLAIM_BOARD, background, wait_for_visitors))
    finally:
        stop_background_workers()
    if os.environ.get("GE_WARM_CLAIMS", "1") != "0":  # and kept from expiring, by the same idle twins
        keep_fresh(CLAIM_BOARD, background_workers, stop_background_workers, wait_for_visitors)
