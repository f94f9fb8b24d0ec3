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
from dataclasses import dataclass, replace
from typing import Any

import sympy
import torch
from torch._guards import detect_fake_mode

DUCK = "duck sizing"  # how a dimension that shares its symbol with another is said
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


@dataclass(frozen=True)
class Traced:
    """One graph as the backend got it: read then, since dynamo drops its placeholders' sources once compiled."""

    env: Any  # its ShapeEnv, or None for a graph traced without one
    gm: torch.fx.GraphModule
    dims: dict[int, Any]  # the input's dimensions as traced, by index (a SymInt where a size is a symbol)


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


def _input_shape(gm: torch.fx.GraphModule, name: str) -> dict[int, Any]:
    """The input's dimensions as the graph traced them, by index (a SymInt where a size is a symbol): its
    placeholder's fake tensor, and a size the graph takes alone (a graph that ends at a break right after reading
    it has no tensor placeholder); empty if the graph takes neither."""
    dims: dict[int, Any] = {}
    for node in gm.graph.nodes:  # dynamo names a local's placeholder after it: L['ids'] is l_ids_
        if node.op != "placeholder":
            continue
        if node.name == f"l_{name}_":
            dims |= dict(enumerate(getattr(node.meta.get("example_value"), "shape", ())))
        source = getattr(getattr(node.meta.get("grapharg"), "source", None), "name", "")
        if (m := _SIZE.match(source)) and m["name"] == name:
            dims[int(m["dim"])] = node.meta.get("example_value")
    return dims


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


def read_symbols(t: Traced, name: str, sizes: tuple[str, ...], root: str = "") -> Symbols:
    """`name`: the forward's input; `sizes`: its dimensions as the graph's guards hold them (a size, or "dynamic");
    `root`: cut from the files' paths."""
    env, gm, traced = t.env, t.gm, t.dims
    symbol_of: dict[int, Any] = {}
    if env is not None:
        for s, sources in env.var_to_sources.items():
            for source in sources:
                m = _SIZE.match(source.name)
                if m and m["name"] == name:
                    symbol_of.setdefault(int(m["dim"]), (s, source))
    dims = []
    for i, size in enumerate(sizes):
        unbacked = _symbols_in(traced[i]) if isinstance(traced.get(i), torch.SymInt) else set()
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
    dims = _ducks(dims)
    return Symbols(tuple(dims), tuple(_unbacked(env, gm, root, {d.symbol for d in dims if d.became == "unbacked"})))


def _ducks(dims: list[Dimension]) -> list[Dimension]:
    """Dimensions that share one symbol, said as such: their sizes were equal when traced, and duck sizing (torch's
    use_duck_shape, on by default) gave them one symbol, so the graph holds only inputs where they are equal."""
    share: dict[str, list[int]] = {}
    for d in dims:
        if d.symbol:
            share.setdefault(d.symbol, []).append(d.index)
    out = []
    for d in dims:
        same = [i for i in share.get(d.symbol, []) if i != d.index]
        if same:
            others = " and ".join(f"size({i})" for i in same)
            d = replace(d, code=f"{DUCK}: one symbol with {others} (equal when traced); an input where they differ "
                        "needs another graph" + (f"; {d.code}" if d.code else ""))
        out.append(d)
    return out


def traced(gm: torch.fx.GraphModule, example_inputs: list[Any], name: str) -> Traced:
    """A graph as a backend gets it, with the ShapeEnv its inputs were traced with (a fake tensor's, or a symbolic
    size's where the graph takes sizes only) and the input `name`'s dimensions."""
    mode = detect_fake_mode(example_inputs)
    env = mode.shape_env if mode is not None else next(
        (x.node.shape_env for x in example_inputs if isinstance(x, torch.SymInt)), None)
    return Traced(env, gm, _input_shape(gm, name))
