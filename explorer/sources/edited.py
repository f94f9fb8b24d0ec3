"""An edited model file, run in the code worker: executed as a module of its own, its config and model classes
built with the knobs and seed of the original, and any failure said in the editor's terms (its line and column,
the edited lines a traceback passed through, torch's own frames folded). The server's process never runs it on a
visitor's source: only jobs in the confined code worker do (explorer/code/job.py, the deployment routes, the
compiled model)."""

from __future__ import annotations

import linecache
import re
import sys
import traceback
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from explorer.core.errors import InputError
from explorer.core.paths import EDITOR
from explorer.sources import registry
from explorer.sources.userfile import FileModel, of_module
from models import entry
from models.config import build_config


@dataclass(frozen=True)
class Frame:
    line: int  # the editor's line number
    function: str
    text: str  # the line as edited


@dataclass(frozen=True)
class CodeError:
    """Where an edit broke, in the editor's terms: `kind` "syntax" (with `column`), "raised" (an exception: the
    edited lines it passed through, the innermost last, and how many frames of torch's and the engine's were
    folded), "output" (the forward returned something that is not a tensor) or "missing" (a class or the factory
    the model is built from is no longer defined)."""

    kind: str
    message: str
    line: int | None = None
    column: int | None = None
    frames: tuple[Frame, ...] = ()
    folded: int = 0

    def text(self) -> str:
        """One paragraph: where, then what."""
        where = f"line {self.line}" + (f", column {self.column}" if self.column else "") if self.line else ""
        said = {"syntax": "Syntax error", "raised": "The edited code raised", "output": "The forward's output",
                "missing": "The edited file"}[self.kind]
        head = f"{said} at {where}: {self.message}" if where else f"{said}: {self.message}"
        if len(self.frames) > 1:
            path = " → ".join(f"line {f.line} ({f.function})" for f in self.frames)
            head += f"\nThrough the edited lines {path}" + (f"; {self.folded} frames of torch folded" if self.folded
                                                            else "")
        return head


def load(source: str, model: str) -> types.ModuleType:
    """The edited file as a module (its own namespace, registered so that dataclasses and pickling find it)."""
    code = compile(source, EDITOR, "exec")
    linecache.cache[EDITOR] = (len(source), None, source.splitlines(True), EDITOR)  # tracebacks show the lines
    module = types.ModuleType("edited_" + re.sub(r"\W", "_", model))  # an operator's "file:factory" too
    module.__file__ = EDITOR
    sys.modules[module.__name__] = module
    exec(code, module.__dict__)
    return module


class MissingClass(Exception):
    """The edited file no longer defines what the model is built from."""


def build(module: types.ModuleType, model: str, values: Mapping[str, Any]) -> nn.Module:
    """The edited model with the original's knobs and seed, in eval mode (as its source builds it): a zoo file's
    config and model classes, or an operator's file's factory and hooks."""
    shipped = registry.source(model)
    if isinstance(shipped, FileModel):
        if not callable(getattr(module, shipped.factory_name, None)):
            raise MissingClass(f"it no longer defines function {shipped.factory_name}, which the {model} model is "
                               "built from (rename it back)")
        try:
            edited = of_module(module, model, shipped.factory_name, EDITOR)
        except InputError as e:
            raise MissingClass(str(e).removeprefix(f"{EDITOR}: ")) from None
        return edited.built(edited.config(values))
    e = entry(model)
    found = {}
    for original in (e.config_cls, e.model_cls):
        cls = getattr(module, original.__name__, None)
        if not isinstance(cls, type):
            raise MissingClass(f"it no longer defines class {original.__name__}, which the {model} model is built "
                               "from (rename it back)")
        found[original] = cls
    config = build_config(found[e.config_cls], values)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        built = found[e.model_cls](config)
    if not isinstance(built, nn.Module):
        raise MissingClass(f"class {e.model_cls.__name__} no longer builds an nn.Module")
    return built.eval()


def model_of(model: str, values: Mapping[str, Any], source: str = "") -> nn.Module:
    """`model` with `values`, built from `source`, its file as edited in the Code tab (only ever in the confined
    code worker), or as shipped when there is no edit."""
    if source:
        return build(load(source, model), model, values)
    return registry.build_model(model, registry.make_config(model, values))


class NotATensor(Exception):
    """The forward returned something a graph cannot be read from."""


def checked_output(output: object) -> torch.Tensor:
    if not isinstance(output, torch.Tensor):
        raise NotATensor(f"forward returned {type(output).__name__}, not a tensor: return the logits")
    return output


def error_of(e: BaseException) -> CodeError:
    """An exception from loading, building or running the edited code, in the editor's terms."""
    if isinstance(e, SyntaxError) and (e.filename == EDITOR or e.filename is None):
        return CodeError("syntax", e.msg, e.lineno, e.offset)
    if isinstance(e, MissingClass):
        return CodeError("missing", str(e))
    if isinstance(e, NotATensor):
        return CodeError("output", str(e))
    stack = traceback.extract_tb(e.__traceback__)
    mine = tuple(Frame(f.lineno or 0, f.name, (f.line or "").strip()) for f in stack if f.filename == EDITOR)
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    message = f"{type(e).__name__}: {first}" if first else type(e).__name__
    line = mine[-1].line if mine else None
    return CodeError("raised", message, line, None, mine, len(stack) - len(mine))
