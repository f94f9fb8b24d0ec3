"""Which lines of the model's Python ran for one input, how often, and which autograd nodes each made.

Define-by-run: the lines that ran are the graph. A separate pass, never timed, runs the train step's forward as the
capture does (train mode, the same seeded draws, so the same graph) with two recorders:

- a line tracer (`sys.settrace`) on the model's own files only (the files that define its modules' classes, torch's
  own excluded): each line's count, as Python's `trace` module counts it (a `for` line once per iteration and once
  to leave);
- autograd's anomaly mode, which keeps the Python stack that created each node (`torch.autograd.detect_anomaly`):
  a node's line is the innermost frame of that stack in the model's files (torch's frames folded into the model's
  line that called them). Nodes made after the model returned are the loss's; a parameter's leaf has no line.

The nodes are numbered as `graph.capture_graph` numbers them (the same walk), so node N here is node N of the
Playground's graph; the pass checks that each node's operation agrees and says so when it does not."""

from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import re
import sys
import traceback
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from explorer.core.errors import one_line
from explorer.eager.capture import TRAIN_SEED, train_loss, training
from explorer.eager.graph import ACCUMULATE, walk

_TORCH = os.path.realpath(Path(torch.__file__).parent) + os.sep  # compared with real paths: a venv may be a link
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_ANOMALY_KEY = "traceback_"  # where anomaly mode keeps a node's creation stack (torch/csrc/autograd/anomaly_mode)


@dataclass(frozen=True)
class SourceLine:
    file: str  # as shown: relative to the working directory where it is under it
    line: int
    code: str
    hits: int  # times the line ran in this input's forward
    nodes: tuple[int, ...]  # the graph's nodes made at this line (the innermost frame of theirs in the model's files)


@dataclass(frozen=True)
class LinesRan:
    files: tuple[str, ...]  # the model's own files, as shown
    lines: tuple[SourceLine, ...]  # every line that ran or made a node, by file then line
    node_line: dict[int, tuple[str, int]]  # graph node -> (file, line); absent: a parameter leaf, or the loss's
    loss_nodes: tuple[int, ...]  # nodes made after the model returned (the loss)
    matches_graph: bool  # the pass's graph has the capture's operations node for node (a model that draws the same)
    error: str = ""  # the forward raised: what, in one line (the lines and nodes are those up to it)
    error_line: tuple[str, int] | None = None  # the model's line where it raised
    reads: frozenset[tuple[str, int]] = frozenset()  # lines that read a tensor's value into Python (data decides)
    paths: tuple[tuple[str, str], ...] = ()  # each file as shown, and where it is read from

    def ran(self, file: str, line: int) -> int:
        """How many times `file`:`line` ran (0: not at all)."""
        return self._hits.get((file, line), 0)

    @cached_property
    def _hits(self) -> dict[tuple[str, int], int]:
        return {(s.file, s.line): s.hits for s in self.lines}

    def line_of(self, node: int) -> str:
        where = self.node_line.get(node)
        return f"{where[0]}:{where[1]}" if where else ("the loss" if node in self.loss_nodes else "")


def _real(path: str) -> str:
    """A file's real path (a venv may be reached through a link); a file that is not on disk (the Code tab's edit,
    held in linecache under its own name) by that name."""
    return os.path.realpath(path) if os.path.exists(path) else path


def model_files(model: nn.Module) -> set[str]:
    """The files that define the classes of the model's modules, torch's own excluded."""
    files = set()
    for m in model.modules():
        try:
            path = inspect.getsourcefile(type(m))
        except (TypeError, OSError):
            continue
        if path and not _real(path).startswith(_TORCH):
            files.add(_real(path))
    return files


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


class _Kept:
    """The model's files, and whether a frame's file is one of them (its real path, cached)."""

    def __init__(self, files: set[str]) -> None:
        self.files = files
        self.real: dict[str, str] = {}

    def _kept(self, filename: str) -> str | None:
        real = self.real.get(filename)
        if real is None:
            real = self.real[filename] = _real(filename)
        return real if real in self.files else None


class _LineCounter(_Kept):
    """sys.settrace's global function: a local tracer for frames of the files kept, counting 'line' events."""

    def __init__(self, files: set[str]) -> None:
        super().__init__(files)
        self.hits: Counter[tuple[str, int]] = Counter()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        path = self._kept(frame.f_code.co_filename)
        if path is None:
            return None
        hits = self.hits

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                hits[(path, frame.f_lineno)] += 1
            return local

        return local


LINE_MARK = "graph-explorer: line "  # a profiler mark's name: the model's line (file:line, as shown) running in it


class _LineMarks(_Kept):
    """sys.settrace's global function: each line of the files kept, while it runs, in a profiler mark of its own
    named by the line (closed at its frame's next line or return), so the innermost mark around an operator is the
    model's line that ran it."""

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        path = self._kept(frame.f_code.co_filename)
        if path is None:
            return None
        shown, running = _shown(path), []

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if running:
                running.pop().__exit__(None, None, None)
            if event == "line":
                mark = torch.profiler.record_function(f"{LINE_MARK}{shown}:{frame.f_lineno}")
                mark.__enter__()
                running.append(mark)
            return local

        return local


@contextlib.contextmanager
def line_marks(model: nn.Module) -> Iterator[None]:
    """Inside, each line of the model's own files runs in a profiler mark named by it (`LINE_MARK`): for a profiled
    step that is never timed (tracing every line slows it)."""
    old = sys.gettrace()
    sys.settrace(_LineMarks(model_files(model)))
    try:
        yield
    finally:
        sys.settrace(old)


# A tensor's value read into Python: a decision the data makes (an `if` on it, a loop bound, an index)
_VALUE_READS = frozenset({torch.Tensor.__bool__, torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__int__,
                          torch.Tensor.__float__, torch.Tensor.__index__})


class _Reads(TorchFunctionMode):
    """The model's lines that read a tensor's value into Python (the innermost frame in its files, when it did)."""

    def __init__(self, counter: _LineCounter) -> None:
        super().__init__()
        self.counter = counter
        self.lines: set[tuple[str, int]] = set()

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func in _VALUE_READS:
            frame = sys._getframe(1)
            while frame is not None and self.counter._kept(frame.f_code.co_filename) is None:
                frame = frame.f_back
            if frame is not None:
                self.lines.add((self.counter._kept(frame.f_code.co_filename), frame.f_lineno))
        return func(*args, **(kwargs or {}))


def _innermost(frames: list[tuple[str, int]], files: set[str], real: dict[str, str]) -> tuple[str, int] | None:
    """The innermost of `frames` (outermost first) in the model's files."""
    for file, line in reversed(frames):
        path = real.get(file)
        if path is None:
            path = real[file] = _real(file)
        if path in files:
            return path, line
    return None


def innermost_line(frames: list[tuple[str, int]], files: set[str]) -> tuple[str, str]:
    """("file:line", its code) of the innermost of `frames` in the model's `files`, or ("", "")."""
    where = _innermost(frames, files, {})
    if where is None:
        return "", ""
    return f"{_shown(where[0])}:{where[1]}", linecache.getline(where[0], where[1]).strip()


def _frames(stack: list[str]) -> list[tuple[str, int]]:
    """A stack as `traceback.format_stack` wrote it (anomaly mode keeps it so): (file, line), outermost first."""
    return [(m["file"], int(m["line"])) for m in map(_FRAME.search, stack) if m is not None]


def record_lines(model: nn.Module, ids: torch.Tensor, ops: list[str] | None = None) -> LinesRan:
    """The lines that ran in the train step's forward of `model` on `ids` and the nodes each made; `ops`: the
    capture's graph's operations by node, to check that this pass drew the same graph."""
    files = model_files(model)
    counter = _LineCounter(files)
    error, error_line = "", None
    roots: list[Any] = []
    with training(model, TRAIN_SEED), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode warns that it is slow: this pass is never timed
        reads = _Reads(counter)
        with torch.autograd.detect_anomaly(check_nan=False), reads:
            old = sys.gettrace()
            sys.settrace(counter)
            try:
                roots = [train_loss(model(ids), model).grad_fn]
            except Exception as e:  # the lines and nodes up to the failure are the finding
                error = one_line(e)
                frames = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(e.__traceback__)]
                error_line = _innermost(frames, files, counter.real)
            finally:
                sys.settrace(old)
    order, _ = walk(roots[0]) if roots and roots[0] is not None else ([], [])
    node_line: dict[int, tuple[str, int]] = {}
    loss_nodes = []
    by_line: dict[tuple[str, int], list[int]] = defaultdict(list)
    for nid, fn in enumerate(order):
        stack = fn.metadata.get(_ANOMALY_KEY) if fn.name() != ACCUMULATE else None
        if stack is None:
            continue
        where = _innermost(_frames(stack), files, counter.real)
        if where is None:
            loss_nodes.append(nid)
        else:
            node_line[nid] = where
            by_line[where].append(nid)
    keys = sorted(set(counter.hits) | set(by_line))
    lines = tuple(SourceLine(_shown(f), n, linecache.getline(f, n).strip(), counter.hits[(f, n)],
                             tuple(by_line[(f, n)])) for f, n in keys)
    matches = ops is None or ops == ["param" if fn.name() == ACCUMULATE else fn.name() for fn in order]
    return LinesRan(tuple(sorted(_shown(f) for f in files)), lines,
                    {k: (_shown(f), n) for k, (f, n) in node_line.items()}, tuple(loss_nodes), matches, error,
                    (_shown(error_line[0]), error_line[1]) if error_line else None,
                    frozenset((_shown(f), n) for f, n in reads.lines), tuple((_shown(f), f) for f in sorted(files)))
