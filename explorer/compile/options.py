"""What a person can ask of torch.compile, validated; safe to import in the app (nothing here compiles)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from explorer.core.errors import InputError
from models.config import echoed

BACKENDS = ("inductor", "aot_eager", "eager")
DYNAMIC_MODES = {"auto": None, "true": True, "false": False}


@dataclass(frozen=True)
class CompileOptions:
    backend: str = "inductor"
    dynamic: str = "auto"  # "auto" (None: automatic dynamic shapes), "true" or "false"
    mark_dynamic: bool = False  # torch._dynamo.mark_dynamic on the sequence dimension
    fullgraph: bool = False
    mark_min: int | None = None  # mark_dynamic's range for the length (None: unbounded); a length outside it fails
    mark_max: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.backend, str) or self.backend not in BACKENDS:
            raise InputError(f"backend must be one of {', '.join(BACKENDS)}; got {echoed(self.backend)}")
        if not isinstance(self.dynamic, str) or self.dynamic not in DYNAMIC_MODES:
            raise InputError(f"dynamic must be one of {', '.join(DYNAMIC_MODES)}; got {echoed(self.dynamic)}")
        for name in ("mark_dynamic", "fullgraph"):  # a count or a string is no switch (it once multiplied a list)
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"{name} must be true or false; got {echoed(getattr(self, name))}")
        bounds = (self.mark_min, self.mark_max)
        if bounds != (None, None):
            if not self.mark_dynamic:
                raise InputError("a range for the length bounds mark_dynamic: turn mark_dynamic on too")
            if not all(b is None or (type(b) is int and b >= 0) for b in bounds):
                raise InputError(f"mark_dynamic's range is whole numbers of tokens; got {echoed(bounds)}")
            if None not in bounds and self.mark_min > self.mark_max:  # type: ignore[operator]
                raise InputError(f"mark_dynamic's range runs from its min to its max; got {echoed(bounds)}")

    def label(self) -> str:
        extra = [f"dynamic={self.dynamic}", *([f"mark_dynamic{self.range_said()}"] if self.mark_dynamic else []),
                 *(["fullgraph"] if self.fullgraph else [])]
        return f"{self.backend} ({', '.join(extra)})"

    def range_said(self) -> str:
        """mark_dynamic's range as torch says one, " [2, 64]", or "" where it has none."""
        if (self.mark_min, self.mark_max) == (None, None):
            return ""
        low = self.mark_min if self.mark_min is not None else 0
        return f" [{low}, {self.mark_max if self.mark_max is not None else '∞'}]"


def cxx_compiler() -> str | None:
    """The C++ compiler inductor would use on CPU, or None (then only eager/aot_eager work)."""
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def require_backend(backend: str) -> None:
    """Refuse an unknown backend, and inductor (with the way out) where no C++ compiler exists."""
    CompileOptions(backend)
    if backend == "inductor" and cxx_compiler() is None:
        raise InputError("inductor needs a C++ compiler and none was found on this machine (g++/c++); "
                         "choose backend aot_eager or eager.")
