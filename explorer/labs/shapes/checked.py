"""A `torch._check` inserted at a line of a model's forward, without editing its file: the forward's source parsed,
the call placed before the statement that starts at that line (every other line keeps its number, so guards and
breaks still name the file's own lines), compiled into a subclass whose forward dynamo then traces.

The check compares sizes and whole numbers, `t <= 64`, `1 <= t <= 64` or `ids.size(1) >= 2`: no other code, so that a
server where visitors' code is not allowed still offers it. `torch._check` tells dynamo a fact it cannot prove: on an
unbacked size, a bound that decides a later branch or assert (no graph break there); on a backed one, a guard."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from torch import nn

from explorer.core.errors import InputError
from explorer.core.paths import sanitize
from explorer.sources.userfile import Inputs

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
SHAPE = "a name, a name.size(k), a name.shape[k] or a whole number"


@dataclass(frozen=True)
class Check:
    expression: str  # "t <= 64"
    line: int  # of the forward's file; 0: the forward's first statement

    def said(self) -> str:
        where = f"before line {self.line}" if self.line else "at the forward's start"
        return f"torch._check({self.expression}) {where}"


def _size(node: ast.expr) -> bool:
    """`t`, `64`, `ids.size(1)`, `ids.shape[1]`: a size or a number, nothing that runs other code."""
    if isinstance(node, ast.Name) or (isinstance(node, ast.Constant) and type(node.value) is int):
        return True
    if isinstance(node, ast.Call):
        f = node.func
        return (isinstance(f, ast.Attribute) and f.attr == "size" and isinstance(f.value, ast.Name)
                and not node.keywords and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
                and type(node.args[0].value) is int)
    if isinstance(node, ast.Subscript):
        v = node.value
        return (isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name)
                and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int)
    return False


def parsed(expression: str) -> list[ast.Compare]:
    """The check's comparisons, one per `torch._check` (a chain, `1 <= t <= 64`, is one per link: each call must get
    one condition, and Python would turn a chain into a branch on the first), or InputError saying what a check may
    be."""
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError as e:
        raise InputError(f"the check {expression!r} is not a comparison ({e.msg})") from None
    sides = [tree.left, *tree.comparators] if isinstance(tree, ast.Compare) else []
    if not (sides and all(type(op) in _OPS for op in tree.ops) and all(map(_size, sides))):
        raise InputError(f"the check {expression!r} must compare sizes ({', '.join(_OPS.values())}, chained or not: "
                         f"`1 <= t <= 64`); each side {SHAPE}")
    return [ast.Compare(a, [op], [b]) for a, op, b in zip(sides, tree.ops, sides[1:], strict=False)]


def _statements(fn: ast.FunctionDef) -> list[tuple[list[ast.stmt], int]]:
    """Every statement of the function's body, nested ones too, as (the body holding it, its index there)."""
    out = []
    for node in ast.walk(fn):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list):
                out += [(body, i) for i, s in enumerate(body) if isinstance(s, ast.stmt)]
    return out


def _first(fn: ast.FunctionDef) -> int:
    """The line of the forward's first statement after its docstring."""
    docstring = isinstance(fn.body[0], ast.Expr) and isinstance(getattr(fn.body[0], "value", None), ast.Constant)
    return fn.body[1 if docstring and len(fn.body) > 1 else 0].lineno


def with_check(model: nn.Module, check: Check) -> nn.Module:
    """`model`, its class swapped for a subclass whose forward runs `torch._check(<expression>)` before the statement
    starting at `check.line` (the same object: its weights and hooks kept). A file's model whose inputs its
    `example_inputs` makes is checked in its own forward, not in the engine's wrapper (dynamo inlines it)."""
    if isinstance(model, Inputs):
        with_check(model.model, check)
        return model
    cls = type(model)
    fn = inspect.unwrap(cls.forward)
    if fn.__code__.co_freevars:  # super() or a closure: the recompiled function would lose its cells
        raise InputError(f"{cls.__name__}.forward uses names of an enclosing scope "
                         f"({', '.join(fn.__code__.co_freevars)}): a check cannot be inserted into it here; edit the "
                         "file in the Code tab where the server allows code")
    if "torch" not in fn.__globals__:
        raise InputError(f"{cls.__name__}.forward's module does not import torch: a check cannot be inserted")
    lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    func.decorator_list = []  # the wrapper (a transformers decorator) is not what dynamo's frame is
    statements = _statements(func)
    at = check.line or _first(func)
    found = next(((body, i) for body, i in statements if body[i].lineno == at), None)
    if found is None:
        starts = sorted({body[i].lineno for body, i in statements})
        raise InputError(f"no statement of {cls.__name__}.forward starts at line {check.line} of "
                         f"{sanitize(inspect.getsourcefile(fn) or '')}; its statements start at lines {_spans(starts)}")
    body, i = found
    calls = [ast.Expr(ast.Call(ast.Attribute(ast.Name("torch", ast.Load()), "_check", ast.Load()), [c], []))
             for c in parsed(check.expression)]
    for node in (n for call in calls for n in ast.walk(call)):  # the calls are at the line they were asked for
        node.lineno = node.end_lineno = at
        node.col_offset = node.end_col_offset = body[i].col_offset
    body[i:i] = calls
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module([func], []), inspect.getsourcefile(fn) or "<forward>", "exec"), fn.__globals__, namespace)
    checked = namespace[func.name]
    checked.__qualname__ = fn.__qualname__
    model.__class__ = type(cls.__name__, (cls,), {"forward": checked, "__module__": cls.__module__})
    return model


def _spans(lines: list[int]) -> str:
    return ", ".join(map(str, lines[:20])) + (", ..." if len(lines) > 20 else "")
