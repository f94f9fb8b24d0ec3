"""The same model through torch.export, its length declared dynamic with a `Dim` range: the range constraints
export proves, or its refusal ("Constraints violated") explained by the compiled graphs' own record of that
dimension, the line that specialized it (export's message names the constant, not the line)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from explorer.core.paths import sanitize
from explorer.labs.shapes.symbols import Dimension

_FIRST_LINES = 2  # of export's message: the error and its explanation (its suggestions follow)
_VIOLATED = "Constraints violated (length)"  # export's words for a dimension declared dynamic that it specialized


@dataclass(frozen=True)
class Exported:
    dim: str  # the Dim as declared ("Dim('length', min=2, max=512)")
    ranges: str  # the range constraints export proved ("s27: [2, 512]"), or "" if it refused
    error: str  # why it refused, in export's words (its first lines), or ""
    line: str  # the line the compiled graphs say specialized the length, or ""
    code: str  # that line's code


def export_length(model: torch.nn.Module, ids: torch.Tensor, low: int, high: int,
                  specialized: Dimension | None) -> Exported:
    """torch.export.export of `model` at `ids` with its length a Dim(low..high); `specialized`: the length as the
    compiled graphs saw it specialized, if they did."""
    dim = torch.export.Dim("length", min=low, max=high)
    said = f"Dim('length', min={low}, max={high})"
    try:
        program = torch.export.export(model, (ids,), dynamic_shapes=({1: dim},))
    except Exception as e:  # export's refusal is the finding: said, with the line it does not name
        first = " ".join(line.strip() for line in str(e).strip().splitlines()[:_FIRST_LINES])
        error = sanitize(re.sub(r"\s+", " ", f"{type(e).__name__}: {first}"))
        # the compiled graphs' line explains only export's own refusal of a declared-dynamic size it specialized
        where = specialized if specialized and _VIOLATED in error else Dimension(1, "", "", "", "", "")
        return Exported(said, "", error, where.line, where.code)
    ranges = ", ".join(f"{k}: [{v.lower}, {v.upper}]" for k, v in program.range_constraints.items())
    return Exported(said, ranges or "none: exported for this one length (static)", "", "", "")
