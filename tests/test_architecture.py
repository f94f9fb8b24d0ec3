"""The layout is the architecture, read from the source with `ast` (every import, inside functions too), so a new
module is checked the day it lands, with no list to add it to:

- the folders are the layers: the graph of which folder imports which has no cycle, so their order is derived
  from it (`layers()`), and no module imports one of a layer above its own;
- the labs are siblings: one never imports another (what two share lives in `explorer/core` or below);
- only the UI (`explorer/ui/`, `app.py`) imports Gradio; `models/` imports only torch and the standard library."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THIRD_PARTY_OF_MODELS = {"torch"}
UI = ("app", "explorer.ui")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    files = [ROOT / "app.py", *(ROOT / "explorer").rglob("*.py"), *(ROOT / "models").rglob("*.py")]
    return {_module_name(p): p for p in files if ".venv" not in p.parts}


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


def folder(module: str) -> str | None:
    """The layer a module belongs to: its folder under explorer/ (each lab its own; the labs' contract and registry
    each their own), or models, or app; None for a module outside the project."""
    parts = module.split(".")
    if parts[0] in ("models", "app"):
        return parts[0]
    if parts[0] != "explorer":
        return None
    if len(parts) == 1:
        return "explorer"
    if parts[1] == "labs" and len(parts) > 2:  # each lab, and the contract below them and the registry above
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _folder_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, deps in _graph().items():
        own = folder(module)
        graph.setdefault(own, set()).update(f for d in deps if (f := folder(d)) not in (None, own))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle in the graph, as a path that starts and ends on the same node."""
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


def layers(graph: dict[str, set[str]]) -> list[list[str]]:
    """The folders in layers derived from their imports: each imports only from the layers before it."""
    placed: dict[str, int] = {}
    while len(placed) < len(graph):
        for node, deps in sorted(graph.items()):
            if node not in placed and all(d in placed for d in deps if d in graph):
                placed[node] = 1 + max((placed[d] for d in deps if d in graph), default=-1)
    return [sorted(n for n, i in placed.items() if i == level) for level in range(max(placed.values()) + 1)]


def test_the_checker_finds_a_cycle_it_is_shown():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "torch"}, "b": set()}) is None
    assert layers({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == [["b"], ["a"], ["c"]]


def test_no_import_cycle_between_modules():
    assert find_cycle(_graph()) is None, find_cycle(_graph())


def test_the_folders_are_layers():
    """No folder imports one that imports it back (directly or round a loop): the layer order exists."""
    cycle = find_cycle(_folder_graph())
    assert cycle is None, f"folders that import each other: {' -> '.join(cycle)}"
    assert _folder_graph()["models"] == set()  # the bottom: pure torch


def _lab(module: str) -> str | None:
    """The lab package a module belongs to (not the labs' contract or registry)."""
    parts = module.split(".")
    is_lab = len(parts) > 2 and parts[:2] == ["explorer", "labs"] and (ROOT / "explorer" / "labs" / parts[2]).is_dir()
    return parts[2] if is_lab else None


def test_the_labs_never_import_each_other():
    wrong = [(m, dep) for m, deps in _graph().items() for dep in deps
             if (a := _lab(m)) and (b := _lab(dep)) and a != b]
    assert wrong == [], f"one lab importing another (move what they share down to explorer/core): {wrong}"


def test_outside_a_lab_the_engine_imports_only_its_package():
    """A lab's public surface is its package (what its `__init__.py` exports): the registry, the claims, the Code tab
    and the API import that, never the lab's own modules, which the lab may then split and rename as it likes."""
    wrong = [(m, dep) for m, deps in _graph().items() for dep in deps
             if (lab := _lab(dep)) and dep != f"explorer.labs.{lab}" and _lab(m) != lab]
    assert wrong == [], f"reaching into a lab's own modules (export what is needed from its __init__.py): {wrong}"


def test_only_the_ui_imports_gradio():
    wrong = [(m, dep) for m, deps in _graph().items() if not m.startswith(UI) for dep in deps
             if dep.split(".")[0] in ("gradio", "gradio_client", "starlette", "fastapi")]
    assert wrong == []
    back_up = [(m, dep) for m, deps in _graph().items() if not m.startswith(UI) for dep in deps if dep.startswith(UI)]
    assert back_up == [], f"the engine importing the UI: {back_up}"


def test_models_import_only_torch_and_the_standard_library():
    allowed = THIRD_PARTY_OF_MODELS | set(sys.stdlib_module_names) | {"models", "__future__"}
    wrong = [(m, dep) for m, deps in _graph().items() if m.startswith("models") for dep in deps
             if dep.split(".")[0] not in allowed]
    assert wrong == []


def test_the_tests_are_laid_out_like_the_code():
    """A test folder per engine folder and per lab, plus models/, bench/ (the benchmark scripts) and app/ (the entry
    points: app.py, the UI and the CLI)."""
    def packages(base: Path) -> set[str]:
        return {p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").exists()}

    assert packages(ROOT / "tests") - {"app", "models", "bench"} == packages(ROOT / "explorer") - {"ui"}
    assert packages(ROOT / "tests" / "labs") == packages(ROOT / "explorer" / "labs")


def test_the_entry_point_imports_nothing_a_spawned_worker_would_inherit():
    """multiprocessing's spawn imports app.py as each worker's main module: at its top it must import nothing (no
    Gradio, no server state, no export directory), only under `if __name__ == "__main__"`."""
    body = ast.parse((ROOT / "app.py").read_text()).body
    top = [type(n).__name__ for n in body if isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign, ast.Expr))
           and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    guarded = [n for n in body if isinstance(n, ast.If)]
    assert top == [] and len(guarded) == 1 and "__main__" in ast.unparse(guarded[0].test)


def test_a_spawned_child_is_tied_to_its_parent_before_anything_heavy_is_imported():
    """Every worker and rank starts in explorer/core/child.py, which watches its parent before importing the
    engine: importing it (and its packages) must load neither torch nor the UI."""
    done = subprocess.run([sys.executable, "-c", "import sys, explorer.core.child; "
                           "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'gradio', 'numpy')))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
