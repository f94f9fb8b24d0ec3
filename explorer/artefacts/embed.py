"""The app's own modules that some code imports, found by reading their files (nothing is run), so that a take-away
can carry them: the reproducing script the model's `models/` files, a lesson's notebook the engine its experiment
runs on (it then runs where torch alone is installed, outside a clone)."""

from __future__ import annotations

import ast
import io
import zipfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the folder that holds explorer/ and models/
PACKAGES = ("explorer", "models")


def module_path(name: str) -> Path | None:
    """The file of module `name` (a package's __init__.py), relative to ROOT, if it is one of PACKAGES'."""
    if name.split(".", 1)[0] not in PACKAGES or not all(part.isidentifier() for part in name.split(".")):
        return None
    base = Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if (ROOT / path).is_file():
            return path
    return None


def _lazy(node: ast.stmt) -> bool:
    """A block that imports only when a name is first read: `if TYPE_CHECKING:` (never at run time) and a module's
    `__getattr__` (PEP 562): what code uses from it, it names where it imports it."""
    return ((isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node, ast.FunctionDef) and node.name == "__getattr__"))


def _named(tree: ast.Module) -> Iterable[str]:
    """The modules a file names outside its lazy blocks: its imports (a function's too), a `from package import
    name` that is a module, and a string that is a module's whole name (one a process imports by name: a fork
    server's preloads, a child's target)."""
    for node in ast.walk(ast.Module([n for n in tree.body if not _lazy(n)], [])):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isascii():
            yield node.value


def closure(roots: Iterable[str], packages: tuple[str, ...] = PACKAGES, parents: bool = True) -> dict[str, str]:
    """The source of each root module and of every module of `packages` they import, transitively, by module name
    (sorted); with `parents`, each one's enclosing packages too (importing a module runs its packages' __init__)."""
    found: dict[str, str] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        path = module_path(name)
        if name in found or path is None or name.split(".", 1)[0] not in packages:
            continue
        source = (ROOT / path).read_text(encoding="utf-8")
        found[name] = source
        todo += _named(ast.parse(source))
        if parents:
            todo += [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
    return dict(sorted(found.items()))


def zipped(modules: dict[str, str]) -> bytes:
    """`closure`'s modules as a zip of their files under their paths, the same bytes for the same sources (each
    entry dated 1980-01-01), for `zipimport` or to unpack."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, source in modules.items():
            path = module_path(name)
            assert path is not None, name  # (closure's modules are files)
            z.writestr(zipfile.ZipInfo(path.as_posix(), (1980, 1, 1, 0, 0, 0)), source,
                       compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buffer.getvalue()
