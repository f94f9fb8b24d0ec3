"""A model from the operator's own Python file or module: a factory whose signature is the architecture.

    def build(layers: int = 2, hidden: Annotated[int, Range(8, 1024)] = 64,
              cell: Literal["gru", "lstm"] = "gru") -> nn.Module: ...

or a factory of one config dataclass whose fields are declared with the zoo's `knob(...)`:
`def build(cfg: MyConfig) -> nn.Module`.

Each parameter becomes a knob, exactly as a zoo config field is: `int`/`float`/`bool`/`str` with its default, a
`Literal[...]` a choice, `Annotated[int, Range(lo, hi)]` a bounded number; so the controls, `--set` keys and
validation come from it. The model takes the input's byte ids, (1, T) int64 (the batching lab also needs
`forward(ids, lengths=None)` returning (batch, classes)), and returns a tensor (logits of
(batch, classes) train against class 0; any other output trains its sum).

Two optional functions beside the factory change that:
- `example_inputs(ids) -> tuple`: the forward's inputs, made from the byte ids (1, T) with tensor operations (an
  image from the text's length, a mask). It runs inside the model's call, so compile, export and every lab see
  the same one-tensor interface (the engine times, compiles and ships `ids -> output`).
- `batch_inputs(ids, lengths) -> tuple`: the same for a padded batch (ids (batch, longest), padded with 0, and
  each sentence's length), for the batching lab; the output must then be one row per sentence, (batch, classes).
- `loss(output) -> scalar`: what a train step differentiates (a tagger's per-token cross-entropy).

Loaded only from what the operator named (the CLI's `--model`, `GE_MODELS`), never from a request. A file that
does not load gets one line naming the file, the line and what to change."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import sys
import traceback
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal, get_args, get_origin

import torch
from torch import nn

from explorer.core.errors import InputError
from explorer.eager.capture import LOSS_HOOK, train_loss
from explorer.sources.contract import Supports
from explorer.sources.probe import ProbedSource
from models.config import Knob, build_config, knob, knobs


@dataclass(frozen=True)
class Range:
    """`Annotated[int, Range(8, 1024)]`: the values a factory parameter takes, both ends included."""

    min: float
    max: float


_PLAIN = {int: "int", float: "float", bool: "bool", str: "str"}


def _field(where: str, p: inspect.Parameter, hint: Any) -> tuple[str, type, Any]:
    """A factory parameter as a knob field, or one line saying what to change."""
    if p.default is inspect.Parameter.empty:
        raise InputError(f"{where}: parameter `{p.name}` needs a default (the architecture the model starts at)")
    kind, bounds, choices = hint, None, None
    if get_origin(hint) is Annotated:
        kind, *extra = get_args(hint)
        bounds = next((e for e in extra if isinstance(e, Range)), None)
    if get_origin(kind) is Literal:
        choices = tuple(get_args(kind))
        if not all(isinstance(c, str) for c in choices) or p.default not in choices:
            raise InputError(f"{where}: `{p.name}` must be a Literal of strings that holds its default")
        kind = str
    if kind not in _PLAIN:
        raise InputError(f"{where}: `{p.name}` must be annotated int, float, bool, str, Literal[...] or "
                         f"Annotated[int, Range(lo, hi)]; got {hint!r}")
    if type(p.default) is not kind and not (kind is float and type(p.default) is int):
        raise InputError(f"{where}: the default of `{p.name}` ({p.default!r}) is not a {kind.__name__}")
    return p.name, kind, knob(p.default, f"{p.name} (the factory's parameter)", min=bounds and bounds.min,
                              max=bounds and bounds.max, choices=choices)


def config_class(factory: Callable[..., nn.Module], where: str) -> tuple[type, bool]:
    """The factory's architecture as a dataclass of knobs, and whether the factory takes it whole: its one
    parameter's own config dataclass (fields declared with models.config.knob, as the zoo's), else a frozen
    dataclass made from its signature (each parameter a knob)."""
    try:
        hints = typing.get_type_hints(factory, include_extras=True)
    except Exception as e:
        raise InputError(f"{where}: cannot read the factory's annotations: {e}") from None
    params = list(inspect.signature(factory).parameters.values())
    if len(params) == 1 and dataclasses.is_dataclass(cls := hints.get(params[0].name)):
        try:
            knobs(cls)  # every field a knob of a type the controls know
            cls()  # every field has a default: the architecture the model starts at
        except Exception as e:
            raise InputError(f"{where}: the config dataclass {cls.__name__} must declare every field with a "
                             f"default through models.config.knob(...) (int, float, bool or str): {e}") from None
        return cls, True
    fields = [_field(where, p, hints.get(p.name, type(p.default))) for p in params]
    return dataclasses.make_dataclass(f"{factory.__name__}_config", fields, frozen=True), False


class FileModel(ProbedSource):
    """One model source from a file's factory (see the module's docstring)."""

    def __init__(self, name: str, factory: Callable[..., nn.Module], where: str, hooks: Hooks | None = None,
                 file: str | None = None, factory_name: str = "build") -> None:
        super().__init__()
        self.name, self._factory, self._where = name, factory, where
        self.file, self.factory_name = file, factory_name  # the Code tab edits the file (where code is allowed)
        self._hooks = hooks or Hooks()
        self.title = name
        self.summary = (inspect.getdoc(factory) or f"the model of {where}").split("\n")[0]
        self.supports = Supports(batched=False, trainable=True, exportable=True)
        self.tree: tuple[str, str] | None = None
        self.own_code = True
        self._config_cls, self._takes_config = config_class(factory, where)

    def knobs(self) -> list[Knob]:
        return knobs(self._config_cls)

    def config(self, values: Mapping[str, Any] | None = None) -> Any:
        return build_config(self._config_cls, values)

    def build(self, config: Any) -> nn.Module:
        try:
            return self.built(config)
        except InputError:
            raise
        except Exception as e:
            raise InputError(_failure(self._where, "the factory raised", e)) from None

    def built(self, config: Any) -> nn.Module:
        """`build`, with the factory's own exception (the Code tab says it at the edited line)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)  # deterministic for its config, as the zoo's
            model = self._made(config)
        if not isinstance(model, nn.Module):
            raise InputError(f"{self._where}: the factory returned {type(model).__name__}, not an nn.Module")
        if self._hooks.example_inputs or self._hooks.batch_inputs:
            model = Inputs(model, self._hooks)
        if self._hooks.loss is not None:
            setattr(model, LOSS_HOOK, self._hooks.loss)
        model.cfg = config
        model._graph_explorer_source = self.name  # how `builds` knows it
        return model.eval()

    def _made(self, config: Any) -> Any:
        return self._factory(config) if self._takes_config else self._factory(**dataclasses.asdict(config))

    def builds(self, module: nn.Module) -> bool:
        return getattr(module, "_graph_explorer_source", None) == self.name

    def loss(self, output: torch.Tensor) -> torch.Tensor:
        return self._hooks.loss(output) if self._hooks.loss is not None else train_loss(output)

    def param_count(self, config: Any) -> int:
        with torch.device("meta"):
            return sum(p.numel() for p in self._made(config).parameters())

    def check(self) -> None:
        """Build the default architecture and run it once on a short input: a model that does not take byte ids,
        or returns no tensor, is refused here with its line, not in the middle of a run."""
        model = self.build(self.config())
        try:
            out = model(*self.example_inputs("probe"))
        except Exception as e:
            what = "example_inputs(ids) or the forward on its inputs" if self._hooks.example_inputs else \
                "its forward on (1, T) byte ids"
            raise InputError(_failure(self._where, f"{what} raised", e)) from None
        if not isinstance(out, torch.Tensor) or not out.is_floating_point():
            raise InputError(f"{self._where}: the forward must return a float tensor (logits); got "
                             f"{type(out).__name__}")
        try:
            loss = self.loss(out)
        except Exception as e:
            raise InputError(_failure(self._where, "loss(output) raised", e)) from None
        if not isinstance(loss, torch.Tensor) or loss.ndim != 0 or not loss.requires_grad:
            got = f"shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise InputError(f"{self._where}: loss(output) must return a scalar tensor that depends on the output; "
                             f"got {got}")
        self.supports = Supports(batched=_runs_batches(model), trainable=True, exportable=True)


@dataclass(frozen=True)
class Hooks:
    """A file's optional functions beside its factory (the module's docstring)."""

    example_inputs: Callable[[torch.Tensor], Any] | None = None
    batch_inputs: Callable[[torch.Tensor, torch.Tensor], Any] | None = None
    loss: Callable[[Any], torch.Tensor] | None = None


HOOKS = {"example_inputs": "def example_inputs(ids): return (image,)",
         "batch_inputs": "def batch_inputs(ids, lengths): return (images, sizes)",
         "loss": "def loss(output): return scalar"}


class Inputs(nn.Module):
    """A user's model behind the engine's interface, `forward(ids, lengths=None)`: its file's `example_inputs(ids)`
    (and, for a padded batch, `batch_inputs(ids, lengths)`) make the forward's inputs from the byte ids, inside the
    call (so compile and export trace them with the model)."""

    def __init__(self, model: nn.Module, hooks: Hooks) -> None:
        super().__init__()
        self.model, self.hooks = model, hooks

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> Any:
        if lengths is None:
            inputs = self.hooks.example_inputs(ids) if self.hooks.example_inputs else (ids,)
        elif self.hooks.batch_inputs is None:
            raise TypeError("this model's file defines no batch_inputs(ids, lengths)")
        else:
            inputs = self.hooks.batch_inputs(ids, lengths)
        return self.model(*(inputs if isinstance(inputs, tuple) else (inputs,)))


def _runs_batches(model: nn.Module) -> bool:
    """Whether the model runs padded batches as the batching lab does, like the zoo's: `forward(ids, lengths=...)`
    returning one row per sentence, (batch, classes)."""
    if "lengths" not in inspect.signature(model.forward).parameters:
        return False
    try:
        out = model(torch.zeros(2, 6, dtype=torch.long), lengths=torch.tensor([6, 3]))
    except Exception:
        return False
    return isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[0] == 2


def _failure(where: str, what: str, e: BaseException) -> str:
    """One line: the file's own deepest frame (its line), what happened, and the exception's first line."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == _path_of(where)]
    at = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else where
    message = str(e).strip().split("\n")[0]
    return f"{at}: {what}: {type(e).__name__}: {message}"


def _path_of(where: str) -> str:
    return str(Path(where).resolve()) if where.endswith(".py") else where


def load(spec: str) -> FileModel:
    """`path/to/file.py`, `path/to/file.py:factory`, `pkg.module` or `pkg.module:factory` (default factory
    `build`) as a model source named after the file or module; checked by one short run."""
    target, _, name = spec.partition(":")
    name = name or "build"
    if target.endswith(".py"):
        path = Path(target).resolve()
        if not path.is_file():
            raise InputError(f"{target}: no such file")
        module_name = f"graph_explorer_model_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        assert loader_spec is not None and loader_spec.loader is not None
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
        try:
            loader_spec.loader.exec_module(module)
        except SyntaxError as e:
            raise InputError(f"{target}:{e.lineno}: syntax error: {e.msg}") from None
        except Exception as e:
            raise InputError(_failure(target, "importing it raised", e)) from None
        label = path.stem
    else:
        try:
            module = importlib.import_module(target)
        except Exception as e:
            raise InputError(f"{target}: cannot import it: {type(e).__name__}: {e}") from None
        label = target.rsplit(".", 1)[-1]
    model = of_module(module, label if name == "build" else f"{label}:{name}", name, target)
    model.check()
    return model


def of_module(module: ModuleType, label: str, factory: str, where: str) -> FileModel:
    """The model source of a loaded module's factory and hooks (unchecked): a file's, or its edit's in the Code
    tab."""
    made = getattr(module, factory, None)
    if not callable(made):
        raise InputError(f"{where}: no function `{factory}` (define `def {factory}(...) -> nn.Module`, or name "
                         f"yours: {where}:my_factory)")
    hooks = {}
    for hook in HOOKS:
        fn = getattr(module, hook, None)
        if fn is not None and not callable(fn):
            raise InputError(f"{where}: `{hook}` must be a function ({HOOKS[hook]})")
        hooks[hook] = fn
    return FileModel(label, made, where, Hooks(**hooks), getattr(module, "__file__", None), factory)
