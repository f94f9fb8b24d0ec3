"""The ways to serve a dynamic model a stream of requests of varying length, each a function from the model to a
server: `serve(ids)` answers one request (1, n) with the model's output. Each is one of PyTorch 2's answers to
"how do I make a dynamic model fast", as a server would apply it after a deploy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo as dynamo
from torch import nn

from explorer.labs.optimize.planner import Plan

Serve = Callable[..., torch.Tensor]
ONE_OP = {"loop": "scan", "exit_with": "cond"}  # the config knobs that write a data-dependent loop as one operator


def scans(config: dict[str, Any]) -> bool:
    """Whether the model at `config` runs a scan, which torch 2.13's inductor compiles only with dynamo capturing
    scalar outputs (observe.SCALAR_OUTPUTS)."""
    return config.get("loop") == "scan"


@dataclass(frozen=True)
class Setting:
    """What a strategy is given: the dynamo backend (the lab's, counting its graphs; whether it is inductor), the
    workload's shortest and longest request, its bucket plan, and whether the model takes `forward(ids, lengths)`
    (padding needs it)."""

    backend: Any
    inductor: bool
    shortest: int
    longest: int
    plan: Plan | None  # the buckets of a strategy that pads (its `pads_to`)
    takes_lengths: bool

    def compile(self, module: nn.Module, dynamic: bool | None) -> Any:
        return torch.compile(module, backend=self.backend, dynamic=dynamic)


@dataclass(frozen=True)
class Strategy:
    name: str
    title: str
    what: str  # one sentence: what it does, for the table and the CLI's help
    build: Callable[[nn.Module, Setting], Serve]
    applies: Callable[[nn.Module, Setting], str | None] = lambda model, s: None
    stance: str = "default"  # torch.compiler.set_stance while it serves...
    stance_from: int = 0  # ...from this request on (before it, the default stance: a warm-up)
    one_op: bool = False  # the model rebuilt with its loop as one operator (ONE_OP)
    pads_to: str = ""  # the bucket plan it pads each request up to: "planned" or "pow2"
    # served after a recording run in another process, which leaves it dynamo's automatic-dynamic profile
    # ("profile") or the mega-cache of its compiled graphs ("mega-cache")
    recorded: str = ""


def _padded(model: nn.Module, s: Setting) -> Serve:
    compiled, plan = s.compile(model, dynamic=False), s.plan
    assert plan is not None, "a strategy that pads names its plan (pads_to)"

    def serve(ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        return compiled(torch.nn.functional.pad(ids, (0, plan.bucket(n) - n)), torch.tensor([n]))
    return serve


def _needs_lengths(model: nn.Module, s: Setting) -> str | None:
    return None if s.takes_lengths else "padding needs `forward(ids, lengths=None)`, which this model does not take"


def _marked(model: nn.Module, s: Setting) -> Serve:
    compiled = s.compile(model, dynamic=None)

    def serve(ids: torch.Tensor) -> torch.Tensor:
        # the length symbolic from the first request, within the workload's range (a min of 2: dynamo specializes 0/1)
        dynamo.mark_dynamic(ids, 1, min=max(2, s.shortest), max=max(3, s.longest))
        return compiled(ids)
    return serve


def repeated_blocks(model: nn.Module) -> list[nn.Module]:
    """The modules of the model's largest ModuleList whose items are all of one class: the blocks it repeats."""
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList) and len(m) > 1
             and len({type(b) for b in m}) == 1]
    return list(max(lists, key=len)) if lists else []


def _regional(model: nn.Module, s: Setting) -> Serve:
    for block in repeated_blocks(model):
        block.compile(backend=s.backend, dynamic=None)  # in place: each block's forward, one code cache for all
    return model


def _no_blocks(model: nn.Module, s: Setting) -> str | None:
    return None if repeated_blocks(model) else "it has no repeated block (a ModuleList of one class) to compile once"


def _needs_inductor(model: nn.Module, s: Setting) -> str | None:
    return None if s.inductor else "the mega-cache holds inductor's compiled graphs: compile with inductor"


def _one_op_loop(model: nn.Module, s: Setting) -> str | None:
    if any(hasattr(getattr(model, "cfg", None), knob) for knob in ONE_OP):
        return None
    return "it has no loop written as one operator here (the RNN's loop=scan, early exit's exit_with=cond)"


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (
    Strategy("eager", "eager", "no compiler: every request runs the Python forward", lambda m, s: m),
    Strategy("auto", "compile, dynamic=None", "static first; after a length changes, one recompile makes it symbolic",
             lambda m, s: s.compile(m, dynamic=None)),
    Strategy("dynamic", "compile, dynamic=True", "symbolic lengths from the first compile",
             lambda m, s: s.compile(m, dynamic=True)),
    Strategy("mark_dynamic", "compile, mark_dynamic(min, max)",
             "the length marked dynamic with the workload's range before the first compile", _marked),
    Strategy("buckets", "planned buckets, static", "pad each request up to the planner's boundaries; one static "
             "graph per boundary", _padded, _needs_lengths, pads_to="planned"),
    Strategy("pow2", "power-of-two buckets, static", "pad each request up to the next power of two; one static "
             "graph per bucket", _padded, _needs_lengths, pads_to="pow2"),
    Strategy("regional", "regional compilation", "compile the repeated block once (each block's module), the rest "
             "eager", _regional, _no_blocks),
    Strategy("pgo", "compile, with the profile of a previous process", "dynamo's automatic-dynamic profile (local "
             "PGO), written by a first process that served the stream, read by a fresh one: lengths seen to vary "
             "start symbolic", lambda m, s: s.compile(m, dynamic=None), recorded="profile"),
    Strategy("warm_start", "compile, warm from the mega-cache", "torch.compiler.save_cache_artifacts in a first "
             "process that served the stream, load_cache_artifacts in a fresh one before its first request: its "
             "compiles read inductor's and AOT autograd's caches", lambda m, s: s.compile(m, dynamic=None),
             _needs_inductor, recorded="mega-cache"),
    Strategy("eager_then_compile", "set_stance(eager_then_compile)", "the first call of each shape eager, "
             "compiled from the second", lambda m, s: s.compile(m, dynamic=None), stance="eager_then_compile"),
    Strategy("eager_on_recompile", "set_stance(eager_on_recompile) after a warm-up", "the first request compiled, "
             "then every shape that would recompile run eagerly (under this stance nothing compiles: without the "
             "warm-up it is eager)", lambda m, s: s.compile(m, dynamic=None), stance="eager_on_recompile",
             stance_from=1),
    Strategy("one_op_loop", "the loop as one operator, compiled", "the RNN's loop=scan or early exit's "
             "exit_with=cond: the data-dependent part is one graph", lambda m, s: s.compile(m, dynamic=None),
             _one_op_loop, one_op=True),
)}
