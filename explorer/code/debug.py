"""The debugging lab on the last edit that ran: the whole lab (each mode, the NaN methods, the comparison, the
recording hook) as one job of the confined code worker, its compiled modes in that same process. Inductor is left
out: it starts a C++ compiler, a process the worker's filter refuses."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.core.errors import InputError
from explorer.core.inputs import tokenize
from explorer.core.progress import Progress
from explorer.labs.debug import MODES, DebugResult, run_debug
from explorer.sources.edited import model_of
from explorer.sources.registry import make_config
from explorer.workers.protocol import Here, Job, JobRunner, WorkerContext
from models.bugs import BUGS, embedding_path

EDIT_MODES = tuple(m for m in MODES if m != "compiled (inductor)")


@dataclass(frozen=True)
class EditDebugJob(Job[DebugResult]):
    model: str
    config: dict
    bug: str
    text: str
    source: str  # the model's file as edited

    def run(self, ctx: WorkerContext) -> DebugResult:
        ctx.held = None
        if embedding_path(model_of(self.model, self.config, self.source)) is None:
            raise InputError("the bugs hook the model's token embeddings, and this edit builds no nn.Embedding")
        result = None
        config = make_config(self.model, self.config)  # the Playground's knobs, as the shipped file declares them
        for item in run_debug(Here(ctx.phase), self.model, config, self.bug, self.text, list(EDIT_MODES),
                              self.source):
            if isinstance(item, Progress):
                ctx.phase(item.phase)
            else:
                result = item
        assert result is not None
        return result


def debug_edit(service: JobRunner, model: str, config: dict, bug: str, text: str, source: str
               ) -> Iterator[Progress | DebugResult]:
    """`bug` injected into the edit `source` of `model`'s file, run by the debugging lab in `service`, which must
    be the confined code worker."""
    assert getattr(service, "confined", False), "edited code runs in the confined code worker only"
    if bug not in BUGS:
        raise InputError(f"unknown bug {bug!r}; bugs are: {', '.join(BUGS)}")
    yield from service.run(EditDebugJob(model, config, bug, tokenize(text).text, source))
