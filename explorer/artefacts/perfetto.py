"""A run for Perfetto: torch.profiler over one eager forward, one eager train step and (where the session compiled)
one compiled forward of the Playground's latest input, with the shapes and the Python stacks recorded, exported as
Chrome-trace JSON and gzip'd (ui.perfetto.dev and chrome://tracing open it as is). Profiled in the compile worker,
which compiles first, outside the profile: the trace shows the compiled code running, not its compile."""

from __future__ import annotations

import gzip
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch._dynamo as dynamo
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.benchmark.utils.common import set_torch_threads

from explorer.compile.options import DYNAMIC_MODES, CompileOptions
from explorer.core.errors import InputError
from explorer.core.fmt import format_bytes
from explorer.core.limits import MAX_ARTEFACT_BYTES, THREADS
from explorer.eager.capture import train_step, training
from explorer.runs.session import Session
from explorer.sources.edited import model_of
from explorer.workers.protocol import Job, WorkerContext
from models.config import config_dict

REGIONS = ("eager forward", "eager train step", "compiled forward")  # the trace's top-level spans, in order


@dataclass(frozen=True)
class PerfettoJob(Job[bytes]):
    model: str
    config: dict
    tokens: tuple[int, ...]
    options: CompileOptions | None  # the compiled forward's, or None: eager only
    source: str = ""  # the model's file as edited in the Code tab (run in the confined code worker only)

    def run(self, ctx: WorkerContext) -> bytes:
        model = model_of(self.model, self.config, self.source)
        ids = torch.tensor([list(self.tokens)], dtype=torch.long)
        compiled = None
        with set_torch_threads(THREADS):
            if self.options is not None:
                ctx.phase(f"compiling ({self.options.label()}), before the profile")
                dynamo.reset()
                o = self.options
                compiled = torch.compile(model, backend=o.backend, dynamic=DYNAMIC_MODES[o.dynamic],
                                         fullgraph=o.fullgraph)
                with torch.no_grad():
                    compiled(ids)
            ctx.phase("profiling")
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
                with record_function(REGIONS[0]), torch.no_grad():
                    model(ids)
                with record_function(REGIONS[1]), training(model):
                    train_step(model, ids)
                if compiled is not None:
                    with record_function(REGIONS[2]), torch.no_grad():
                        compiled(ids)
            with tempfile.TemporaryDirectory(prefix="graph-explorer-trace-") as tmp:
                path = Path(tmp) / "trace.json"
                prof.export_chrome_trace(str(path))
                raw = path.read_bytes()
        dynamo.reset()
        return gzip.compress(raw, compresslevel=6)


def checked_size(trace: bytes) -> bytes:
    """The trace, or an InputError past the artefact limit (a shorter input makes a smaller one)."""
    if len(trace) > MAX_ARTEFACT_BYTES:
        raise InputError(f"the Perfetto trace is {format_bytes(len(trace))} gzip'd, past this server's limit of "
                         f"{format_bytes(MAX_ARTEFACT_BYTES)} (GE_MAX_ARTEFACT_BYTES): profile a shorter input")
    return trace


def latest_run_job(session: Session) -> PerfettoJob:
    """The profile of the session's latest run: its model, config and input, compiled as it last was (if it was)."""
    run = session.last
    if run is None:
        raise InputError("run an input first: the trace profiles the Playground's latest run")
    options = run.compiled.options if run.compiled is not None and run.compiled.compiled is not None else None
    return PerfettoJob(run.model, config_dict(run.config), tuple(run.input.ids[0].tolist()), options)
