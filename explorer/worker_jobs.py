"""What the compile worker does with a job (runs in the worker process; see worker.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo as dynamo

from explorer.batch_compiled import batch_job
from explorer.compiled import CompiledModel, CompileOptions, explain


def _ids(tokens: list[int]) -> torch.Tensor:
    return torch.tensor([tokens], dtype=torch.long)


class JobRunner:
    """Holds one compiled model: the one of the last job's (session, model, config, options)."""

    def __init__(self, report_phase: Callable[[str], None]) -> None:
        self._phase = report_phase
        self._key: tuple | None = None
        self._compiled: CompiledModel | None = None
        self._explained: dict[str, Any] = {}
        self._seen: list[list[int]] = []

    def _switch(self, job: dict[str, Any], key: tuple) -> None:
        options = CompileOptions(**job["options"])
        self._phase("explaining graph breaks")
        first = job["history"][0] if job["history"] else job["inputs"][0]
        dynamo.reset()
        self._explained = explain(job["model"], job["config"], _ids(first))  # resets dynamo again
        self._compiled = CompiledModel(job["model"], job["config"], options)
        self._key, self._seen = key, []
        for i, tokens in enumerate(job["history"]):
            self._phase(f"replaying this session's earlier input {i + 1}/{len(job['history'])}")
            self._compiled.call(_ids(tokens))
            self._seen.append(tokens)

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        if job.get("kind") == "batch":
            self._key = None  # the lab resets dynamo: the playground's compiled model must be rebuilt
            return batch_job(job, self._phase)
        key = (job["session"], job["model"], repr(sorted(job["config"].items())), repr(sorted(job["options"].items())))
        if key != self._key or self._seen != job["history"]:
            self._switch(job, key)
        cm = self._compiled
        runs = []
        for tokens in job["inputs"]:
            ids = _ids(tokens)
            self._phase(f"compiling for {len(tokens)} tokens")
            outcome = cm.call(ids)
            self._seen.append(tokens)
            run: dict[str, Any] = {
                "length": outcome.length,
                "wall_s": outcome.wall_s,
                "events": [e.as_dict(with_code=True) for e in outcome.events],
                "fallback": outcome.fallback,
                "error": outcome.error,
            }
            if outcome.error is None:
                self._phase(f"timing eager and compiled at {len(tokens)} tokens")
                eager, comp, peak_eager, peak_comp = cm.measure(ids)
                run.update(eager=eager.as_dict(), compiled=comp.as_dict(), peak_eager_bytes=peak_eager,
                           peak_compiled_bytes=peak_comp)
            runs.append(run)
        return {
            "explain": self._explained,
            "runs": runs,
            "graph_count": len({e.compile_id for e in cm.events}),
            "limit_hit_at": cm.limit_hit_at,
            "recompile_limit": dynamo.config.recompile_limit,
        }
