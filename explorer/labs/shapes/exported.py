"""The same model through torch.export, its length declared two ways: a `Dim` range, which export must prove or
refuse ("Constraints violated"), and `Dim.AUTO`, which lets export decide (dynamic over the range it proves, or
static where the code specialized it). A refusal or a static length is explained by the compiled graphs' own record
of that dimension, the line that specialized it (export's words name the constant, not the line)."""

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
    dim: str  # the length as declared ("Dim('length', min=2, max=512)", "Dim.AUTO")
    ranges: str  # the range constraints export proved ("s27: [2, 512]"), or why there are none; "" if it refused
    error: str  # why it refused, in export's words (its first lines), or ""
    line: str  # the line the compiled graphs say specialized the length, where that explains the finding, or ""
    code: str  # that line's code


def export_length(model: torch.nn.Module, ids: torch.Tensor, low: int, high: int,
                  specialized: Dimension | None) -> tuple[Exported, ...]:
    """torch.export.export of `model` at `ids`, its length a Dim(low..high), then Dim.AUTO; `specialized`: the
    length as the compiled graphs saw it specialized, if they did."""
    return (_export(model, ids, torch.export.Dim("length", min=low, max=high),
                    f"Dim('length', min={low}, max={high})", specialized),
            _export(model, ids, torch.export.Dim.AUTO, "Dim.AUTO", specialized))


def _export(model: torch.nn.Module, ids: torch.Tensor, dim: object, said: str,
            specialized: Dimension | None) -> Exported:
    try:
        program = torch.export.export(model, (ids,), dynamic_shapes=({1: dim},))
    except Exception as e:  # export's refusal is the finding: said, with the line it does not name
        first = " ".join(line.strip() for line in str(e).strip().splitlines()[:_FIRST_LINES])
        error = sanitize(re.sub(r"\s+", " ", f"{type(e).__name__}: {first}"))
        # the compiled graphs' line explains only export's own refusal of a declared-dynamic size it specialized
        where = specialized if specialized and _VIOLATED in error else None
        return Exported(said, "", error, where.line if where else "", where.code if where else "")
    if program.range_constraints:
        return Exported(said, ", ".join(f"{k}: [{v.lower}, {v.upper}]" for k, v in program.range_constraints.items()),
                        "", "", "")
    # static: Dim.AUTO let the code's specialization stand (a declared Dim would have been refused for it)
    return Exported(said, f"none: exported for this one length ({ids.shape[1]}, static)", "",
                    specialized.line if specialized else "", specialized.code if specialized else "")
