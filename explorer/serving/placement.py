"""Where jobs run: on this machine (measurement processes, compile workers) or, with `GE_RAY_ADDRESS`, on the Ray
cluster's actors (explorer/serving/raypool.py). The app and the CLI ask here; nothing else changes between the two."""

from __future__ import annotations

import os
import zlib
from typing import TYPE_CHECKING, Any

from explorer.core.limits import COMPILE_WORKERS
from explorer.serving.pool import MeasurePool
from explorer.serving.queueing import QUEUE
from explorer.workers.process import WorkerProcess

if TYPE_CHECKING:
    from explorer.serving.raypool import RayCompileService, RayPool

_pool: Any = None
_ray_compilers: list[Any] = []
_compilers: list[WorkerProcess] = []


def _ray_address() -> str:
    return os.environ.get("GE_RAY_ADDRESS", "")


def measure_pool() -> MeasurePool | RayPool:
    """The process's measurement pool (created on first use; its processes start on their first job). The queue
    lets as many runs be timed at once as the pool has measuring cores."""
    global _pool
    if _pool is None:
        if _ray_address():
            from explorer.serving.raypool import RayPool  # optional: only this deployment has ray

            _pool = RayPool(_ray_address())
        else:
            _pool = MeasurePool()
        QUEUE.slots = _pool.size
    return _pool


def compile_service(session: str = "") -> WorkerProcess | RayCompileService:
    """The compile worker for `session`, out of `GE_COMPILE_WORKERS`: a session always gets the same one, where its
    compiled model stays between jobs."""
    pool = _ray_compilers if _ray_address() else _compilers
    if not pool:
        if _ray_address():
            from explorer.serving.raypool import RayCompileService  # optional: only this deployment has ray

            pool.extend(RayCompileService(_ray_address()) for _ in range(int(COMPILE_WORKERS)))
        else:
            pool.extend(WorkerProcess() for _ in range(int(COMPILE_WORKERS)))
    return pool[zlib.crc32(session.encode()) % len(pool)]
