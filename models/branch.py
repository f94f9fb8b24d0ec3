"""What a forward decided from the data, for drawing: the graph holds only the path taken, so a decision not to
stop leaves no node of its own (an early-exit head whose output the loss does not use is not in the graph)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Branch:
    after: str  # the module after which it was decided ("blocks.2")
    mark: str  # short, drawn beside it: "0.41 < 0.60"
    said: str  # whole, on hover: "exit head 2: least confident item 0.41, threshold 0.60: next block"
    exits: bool  # the forward left its loop here
    skipped: tuple[str, ...] = ()  # modules that did not run because of it ("blocks.4", "blocks.5")
