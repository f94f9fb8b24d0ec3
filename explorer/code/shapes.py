"""The shapes lab on the last edit that ran: the edit compiled at the lab's first lengths and the typed lengths
predicted from its graphs' guards, then run, as one job of the confined code worker. Where code is allowed, this is
where a `torch._check` goes at any line: typed into the edit, not inserted by the lab (explorer/labs/shapes/checked)."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.compile.options import CompileOptions
from explorer.core.errors import InputError
from explorer.core.progress import Progress
from explorer.core.workload import typed_lengths
from explorer.labs.shapes import ShapesJob, ShapesResult
from explorer.workers.protocol import JobRunner

COMPILED_AT = (8, 16)  # as the shapes lab's default: two lengths let automatic dynamic act
EDIT_LENGTHS = "12, 1, 40, 16, 60"  # the requests the tab offers first (the code worker's time limit bounds them)


def shapes_edit(service: JobRunner, model: str, config: dict, source: str, lengths: str, unbacked: bool
                ) -> Iterator[Progress | ShapesResult]:
    """The typed `lengths` predicted, then run, on the edit `source` of `model`'s file, compiled with backend eager
    (inductor would start a C++ compiler, a process the worker refuses) in `service`, which must be the confined
    code worker; `unbacked`: the length marked unbacked before every call."""
    assert getattr(service, "confined", False), "edited code runs in the confined code worker only"
    if not lengths.strip():
        raise InputError("type the lengths to predict, then run (numbers of tokens: 12, 1, 40)")
    requests = typed_lengths(lengths)
    yield from service.run(ShapesJob(model, config, CompileOptions("eager"), COMPILED_AT, requests, (), unbacked,
                                     source=source))
