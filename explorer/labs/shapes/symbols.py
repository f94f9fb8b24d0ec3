"""What each dimension of the input became in one compiled graph, and the symbols born inside the forward, each
at the model's line that made it so. Read from what dynamo traced the graph with: its shape environment (torch's
ShapeEnv, the record tlparse's "symbolic shape specializations" come from) and the FX graph's nodes.

- A dimension dynamo traced as a symbol (`s27`) stays **dynamic** over the range its guards leave it, or is
  **specialized** to a constant where the model's code needed one (a loop over `x.unbind(1)`, a `view` to a
  fixed size): the shape environment keeps the user's line of each specialization.
- A dimension with no symbol is **static**: the graph was compiled for that size only; a size of 0 or 1 always
  is (dynamo's 0/1 specialization).
- An **unbacked** symbol (`u0`) is a size or value only the data decides (`nonzero`, `.item()`), born at an FX
  node whose stack trace names the line; or an input's dimension marked unbacked (`mark_unbacked`), traced without
  a value.

The shape environment and the graph are torch's internals (torch.fx.experimental.symbolic_shapes); they are read in
the compile worker only, and tests/labs/shapes checks each kind on real models."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from torch._guards import detect_fake_mode

_SIZE = re.compile(r"^L\['(?P<name>\w+)'\]\.size\(\)\[(?P<dim>\d+)\]$")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n\s*(?P<code>[^\n]*)')


@dataclass(frozen=True)
class Dimension:
    index: int  # of the input's dimensions
    symbol: str  # dynamo's symbol for it ("s27"), or "" where the graph was compiled static
    became: str  # "dynamic", "specialized" or "static"
    value: str  # a dynamic one's range ("[5, ∞)"), else its size
    line: str  # the model's line that specialized it ("models/rnn.py:97 in forward"), or ""
    code: str  # that line's code, or why a static size is static


@dataclass(frozen=True)
class Unbacked:
    symbol: str  # "u0"
    op: str  # the operation whose output it sizes or is ("nonzero", "item")
    value: str  # its range
    line: str
    code: str


@dataclass(frozen=True)
class Symbols:
    dimensions: tuple[Dimension, ...]
    unbacked: tuple[Unbacked, ...]


UNREAD = Symbols((), ())  # a graph whose tracing was not seen


def _bound(x: Any) -> str:
    """A range's end: torch's int_oo (and the largest int64, an unbacked size's) as ∞."""
    return "∞" if "oo" in str(x) or int(x) > 2**62 else str(int(x))


def _range(r: Any) -> str:
    return f"[{_bound(r.lower)}, {_bound(r.upper)}" + (")" if _bound(r.upper) == "∞" else "]")


def _where(frame: Any, root: str) -> str:
    return f"{_short(frame.filename, root)}:{frame.lineno} in {frame.name}"


def _short(path: str, root: str) -> str:
    return path[len(root):].lstrip("/") if root and path.startswith(root) else path.rsplit("/", 1)[-1]


def _node_line(node: torch.fx.Node, root: str) -> tuple[str, str]:
    """The innermost frame of the node's stack trace: (where, its code)."""
    frames = list(_FRAME.finditer(node.meta.get("stack_trace") or ""))
    if not frames:
        return "", ""
    f = frames[-1]
    return f"{_short(f['file'], root)}:{f['line']} in {f['fn']}", f["code"].strip()


def _symbols_in(value: Any) -> set[str]:
    if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
        return {str(s) for s in value.node.expr.free_symbols}
    if isinstance(value, torch.Tensor):
        return {str(s) for d in value.shape if isinstance(d, torch.SymInt) for s in d.node.expr.free_symbols}
    if isinstance(value, list | tuple):
        return set().union(*map(_symbols_in, value)) if value else set()
    return set()


def _input_shape(gm: torch.fx.GraphModule, name: str) -> tuple[Any, ...]:
    """The input's shape as the graph traced it (its placeholder's fake tensor: a SymInt where a size is a
    symbol), or () if the graph does not take it."""
    for node in gm.graph.nodes:  # dynamo names a local's placeholder after it: L['ids'] is l_ids_
        if node.op == "placeholder" and node.name == f"l_{name}_":
            return tuple(getattr(node.meta.get("example_value"), "shape", ()))
    return ()


def _unbacked(env: Any, gm: torch.fx.GraphModule, root: str, inputs: set[str]) -> list[Unbacked]:
    """The unbacked symbols the forward's operations made, each at the first node whose value holds it (not
    `inputs`: an input's dimension marked unbacked is that dimension's)."""
    born: list[Unbacked] = []
    seen = set(inputs)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        for s in sorted(_symbols_in(node.meta.get("example_value")) - seen):
            seen.add(s)
            if s.startswith("u"):
                line, code = _node_line(node, root)
                symbol = sympy.Symbol(s, integer=True)
                value = _range(env.var_to_range[symbol]) if env is not None and symbol in env.var_to_range else ""
                born.append(Unbacked(s, getattr(node.target, "__name__", str(node.target)), value, line, code))
    return sorted(born, key=lambda u: int(u.symbol[1:]))


def read_symbols(env: Any, gm: torch.fx.GraphModule, name: str, sizes: tuple[str, ...], root: str = "") -> Symbols:
    """`env`: the graph's ShapeEnv (None for a graph traced without one); `name`: the forward's input; `sizes`: its
    dimensions as the graph's guards hold them (a size, or "dynamic"); `root`: cut from the files' paths."""
    symbol_of: dict[int, Any] = {}
    if env is not None:
        for s, sources in env.var_to_sources.items():
            for source in sources:
                m = _SIZE.match(source.name)
                if m and m["name"] == name:
                    symbol_of.setdefault(int(m["dim"]), (s, source))
    traced = _input_shape(gm, name)
    dims = []
    for i, size in enumerate(sizes):
        unbacked = _symbols_in(traced[i]) if i < len(traced) and isinstance(traced[i], torch.SymInt) else set()
        if i not in symbol_of and unbacked:
            s = sympy.Symbol(min(unbacked), integer=True)
            dims.append(Dimension(i, str(s), "unbacked", _range(env.var_to_range[s]) if env is not None else "", "",
                                  "marked unbacked: traced without a value, no guard reads it"))
            continue
        if i not in symbol_of:
            why = "sizes 0 and 1 are never symbolic (0/1 specialization)" if size in ("0", "1") else \
                "compiled for this size only"
            dims.append(Dimension(i, "", "static", size, "", why))
            continue
        s, source = symbol_of[i]
        fixed = env.replacements.get(s)
        if fixed is not None and fixed.is_number:
            stack = env.specialization_stacks.get(source)
            frame = stack[-1] if stack else None
            dims.append(Dimension(i, str(s), "specialized", str(int(fixed)), _where(frame, root) if frame else "",
                                  (frame.line or "").strip() if frame else ""))
        else:
            dims.append(Dimension(i, str(s), "dynamic", _range(env.var_to_range[s]), "", ""))
    return Symbols(tuple(dims), tuple(_unbacked(env, gm, root, {d.symbol for d in dims if d.became == "unbacked"})))


def shape_env_of(example_inputs: list[Any]) -> Any:
    """The ShapeEnv a backend's fake inputs were traced with (None for a graph with no fake inputs)."""
    mode = detect_fake_mode(example_inputs)
    return mode.shape_env if mode is not None else None
