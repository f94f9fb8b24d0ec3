"""The layout is the architecture: imports flow one way, the engine never imports Gradio, models only torch.

Read from the source with `ast` (every import, inside functions too), so a new module is checked the day it
lands."""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Lowest first: a module may import its own layer and the layers before it, never one after.
LAYERS = ["models", "explorer", "explorer.core", "explorer.eager", "explorer.compile", "explorer.lab",
          "explorer.deploy", "explorer.debug", "explorer.ddp", "explorer.serving", "explorer.session",
          "explorer.claims", "explorer.views", "explorer.cli", "explorer.__main__", "app"]
THIRD_PARTY_OF_MODELS = {"torch"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    files = [ROOT / "app.py", *(ROOT / "explorer").rglob("*.py"), *(ROOT / "models").rglob("*.py")]
    return {_module_name(p): p for p in files}


def _imports(path: Path, known: set[str]) -> set[str]:
    """Every module `path` imports; `from package import module` counts as the module where it is one."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known}
    return found


def _graph() -> dict[str, set[str]]:
    sources = _sources()
    known = set(sources)
    return {name: _imports(path, known) - {name} for name, path in sources.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the graph's own modules, as a path that starts and ends on the same module."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, nxt])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return None


def _layer(module: str) -> int | None:
    for i, prefix in reversed(list(enumerate(LAYERS))):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return None


def test_the_checker_finds_a_cycle_it_is_shown():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "torch"}, "b": set()}) is None


def test_no_import_cycle():
    assert find_cycle(_graph()) is None, find_cycle(_graph())


def test_every_module_sits_in_a_layer():
    assert [m for m in _graph() if _layer(m) is None] == []


def test_no_import_runs_back_up_a_layer():
    wrong = [(m, dep) for m, deps in _graph().items() for dep in deps
             if _layer(dep) is not None and _layer(dep) > _layer(m)]
    assert wrong == [], f"imports that run back up a layer: {wrong}"


def test_the_engine_never_imports_gradio():
    wrong = [(m, dep) for m, deps in _graph().items() if m != "app" for dep in deps
             if dep.split(".")[0] in ("gradio", "gradio_client")]
    assert wrong == []


def test_models_import_only_torch_and_the_standard_library():
    allowed = THIRD_PARTY_OF_MODELS | set(sys.stdlib_module_names) | {"models", "__future__"}
    wrong = [(m, dep) for m, deps in _graph().items() if m.startswith("models") for dep in deps
             if dep.split(".")[0] not in allowed]
    assert wrong == []


def test_the_tests_are_laid_out_like_the_code():
    """A test folder per engine folder, plus models/ and app/ (the entry points: app.py and the CLI)."""
    code = {p.name for p in (ROOT / "explorer").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    tests = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert tests - {"app", "models"} == code
