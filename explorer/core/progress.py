"""What a running piece of work says while it runs: one type for every stream, from a worker process's job to a
lab, a claim and a Playground run. The UI shows `phase` in the status line and the progress bar; the CLI shows
nothing of it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    elapsed_s: float  # since the work started (0.0 where it is not counted)
    phase: str  # what it is doing now, as a person reads it

    @staticmethod
    def said(text: str) -> Progress:
        """A message with no clock of its own (its text says how far, where that matters)."""
        return Progress(0.0, text)
