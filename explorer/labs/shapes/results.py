"""What the shapes lab found: the graphs dynamo cached, what each request was predicted to do, and what it did."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.compile.observe import GraphBreak
from explorer.labs.shapes.exported import Exported
from explorer.labs.shapes.guards import CachedGraph
from explorer.labs.shapes.predict import Outcome, Prediction


@dataclass(frozen=True)
class Request:
    predicted: Prediction
    did: Outcome  # what dynamo did when the request ran
    graph: str  # the compile id of the forward's graph it compiled, if it compiled one
    inner: int  # graphs compiled for frames inside the forward (a function after a graph break, a callee)

    @property
    def agrees(self) -> bool:
        return self.predicted.outcome is self.did


@dataclass(frozen=True)
class ShapesResult:
    model: str
    config: dict
    setting: str  # the compile options and switches, in words
    compiled_at: tuple[int, ...]  # the lengths compiled first
    input_name: str  # the forward's argument the guards name (L['ids'])
    graphs: tuple[CachedGraph, ...]  # the cached graphs the prediction read, the newest first
    skipped: str  # why dynamo compiled no graph of the forward at all (it runs eagerly), or ""
    breaks: tuple[GraphBreak, ...]  # where dynamo broke the forward's graph on the lengths compiled first
    requests: tuple[Request, ...]
    predict_s: float  # the prediction's seconds, for every request, before any ran
    limit: int  # dynamo's recompile limit in the worker
    exported: tuple[Exported, ...] = ()  # the model through torch.export, its length a Dim range then Dim.AUTO
    stance: str = "default"  # torch.compiler.set_stance's (job.STANCES)

    @property
    def agreed(self) -> int:
        return sum(r.agrees for r in self.requests)

    def count(self, outcome: Outcome, predicted: bool) -> int:
        return sum((r.predicted.outcome if predicted else r.did) is outcome for r in self.requests)
