"""The debugging lab: inject a bug into a model and run it eagerly, under torch.compile and traced; how long until
it fails and what the traceback names; for a NaN, which method finds the line; for a silent bug, the comparison."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from explorer.core.examples import DEFAULT_TEXT
from explorer.core.limits import MAX_TEXT_CHARS
from explorer.core.progress import Progress
from explorer.labs.contract import LabContext, LabSpec, Needs
from explorer.labs.debug.lab import DebugResult, run_debug
from explorer.labs.debug.modes import MODES
from explorer.labs.debug.view import OUTPUTS, format_debug, view_of
from explorer.sources.contract import Subject
from models.bugs import BUGS, embedding_path
from models.config import knob


@dataclass(frozen=True)
class DebugParams:
    bug: str = knob("shape", "the bug injected, each a hook on the model's embeddings (models/bugs.py)",
                    choices=tuple(BUGS), titles=tuple(b.title for b in BUGS.values()))
    text: str = knob(DEFAULT_TEXT, "the input the bugged model runs", most=MAX_TEXT_CHARS)
    modes: tuple[str, ...] = knob(("eager", "compiled (eager)", "traced"), "the modes it runs in (none given: all); "
                                  "compiled modes run in the compile worker, inductor compiles C++", choices=MODES,
                                  flag="--mode")


def run(subject: Subject | None, p: DebugParams, ctx: LabContext) -> Iterator[Progress | DebugResult]:
    assert subject is not None, "the debugging lab needs a model"
    yield from run_debug(ctx.workers.compile, subject.model, subject.config, p.bug, p.text, list(p.modes))


def refuses(subject: Subject) -> str | None:
    """The bugs hook the model's token embeddings (models/bugs.py): a model without an nn.Embedding has none."""
    if embedding_path(subject.build()) is not None:
        return None
    return (f"the debugging lab's bugs hook a model's token embeddings: {subject.model} has no nn.Embedding (add "
            "one where the byte ids come in, e.g. `self.embed = nn.Embedding(256, width)`)")


SPEC = LabSpec(
    name="debug", title="Debugging lab", summary="inject a bug and see it in eager, compiled and traced code",
    intro="Dynamic graphs are said to be easier to debug: the error names the line that caused it, while it "
          "happens. This lab injects a bug into **the Playground's latest run** (its model, architecture and text) "
          "and runs it eagerly, under `torch.compile` with three backends, and traced at 8 tokens: how long until it "
          "fails, and what the traceback says. For a NaN: which of three methods finds the line. For a silent bug: "
          "the comparison that shows it. And a hook eager mode allows, under compile.",
    button="Run the bug", params=DebugParams, needs=Needs.RUN, run=run, view=view_of, outputs=OUTPUTS,
    text=format_debug, refuses=refuses)
