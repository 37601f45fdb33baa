"""The architecture, read from the source with ast (no project module is imported).

Layers: mlir_bridge < lowering < frontend; a module may import its own layer or a lower one. The one exception:
lowering may import the format DSL subpackage ``frontend.format``, which imports nothing else from ``frontend``.
Imports resolve as Python does: ``from pkg import sub`` names the submodule ``pkg.sub``; imports under
``if TYPE_CHECKING:`` (and anything else that runs at import time) are module-level; imports inside functions are
lazy. Also: no module-level import cycle, at most one ring through lazy imports (the one named below), no folder
with more than 20 modules, and only mlir_bridge imports the MLIR bindings (``mlir``).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"mlir_bridge": 0, "lowering": 1, "frontend": 2}
SHARED_DSL = "frontend.format"  # the part of frontend that lowering may import
MAX_FOLDER_MODULES = 20
# The one ring through function-level imports that may exist (none does today); any other ring fails the test.
# Allowing one means naming its modules here, with the reason in docs/architecture.md.
ALLOWED_LAZY_RING: frozenset[str] = frozenset()


@dataclass
class ImportGraph:
    """Project modules and the project modules each imports, split by when the import runs."""

    paths: dict[str, Path] = field(default_factory=dict)
    module_level: dict[str, set[str]] = field(default_factory=dict)
    lazy: dict[str, set[str]] = field(default_factory=dict)
    external: dict[str, set[str]] = field(default_factory=dict)  # top-level names of imported non-project modules

    def edges(self) -> dict[str, set[str]]:
        return {m: self.module_level[m] | self.lazy[m] for m in self.paths}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement and whether it runs at import time (i.e. is not inside a function)."""
    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, not in_function
            walk_in = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            yield from walk(child, walk_in)
    return walk(tree, False)


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    """Absolute names a statement imports: ``from pkg import sub`` gives ``pkg.sub`` when that is a module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".")
        base = base[:len(base) - node.level + (1 if is_package else 0)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    subs = [f"{prefix}.{alias.name}" for alias in node.names]
    return [s for s in subs if s in known] + ([prefix] if any(s not in known for s in subs) else [])


def build_graph(root: Path = ROOT) -> ImportGraph:
    g = ImportGraph()
    for pkg in LAYERS:
        for path in sorted((root / pkg).rglob("*.py")):
            g.paths[_module_name(path)] = path
    known = set(g.paths)
    for mod, path in g.paths.items():
        g.module_level[mod], g.lazy[mod], g.external[mod] = set(), set(), set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, at_import_time in _imports(tree):
            for name in _targets(mod, path.name == "__init__.py", node, known):
                target = name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if not target:
                    g.external[mod].add(name.split(".")[0])
                elif target != mod:
                    (g.module_level if at_import_time else g.lazy)[mod].add(target)
    return g


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import rings: strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    rings: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                ring = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    ring.append(w)
                    if w == v:
                        break
                if len(ring) > 1:
                    rings.append(sorted(ring))
    return sorted(rings)


def _layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


def _in_shared_dsl(module: str) -> bool:
    return module == SHARED_DSL or module.startswith(SHARED_DSL + ".")


def upward_imports(g: ImportGraph) -> list[str]:
    """Imports against the layer order, lowering's imports of the shared DSL excepted."""
    found = []
    for a, targets in sorted(g.edges().items()):
        for b in sorted(targets):
            if _layer(b) > _layer(a) and not (a.startswith("lowering") and _in_shared_dsl(b)):
                found.append(f"{a} -> {b}")
    return found


def _describe(rings: list[list[str]]) -> str:
    return "\n".join(" <-> ".join(r) for r in rings)


GRAPH = build_graph()


def test_graph_is_read():
    assert {"frontend", "lowering", "mlir_bridge", SHARED_DSL} <= set(GRAPH.paths)
    assert GRAPH.module_level["frontend.format"], "the package __init__ imports its submodules"


def test_no_module_level_cycles():
    rings = strongly_connected(GRAPH.module_level)
    assert not rings, f"import cycles at module level:\n{_describe(rings)}"


def test_no_upward_imports():
    found = upward_imports(GRAPH)
    assert not found, "imports against the layer order mlir_bridge < lowering < frontend:\n" + "\n".join(found)


def test_format_dsl_imports_nothing_else_from_frontend():
    found = [f"{a} -> {b}" for a, targets in sorted(GRAPH.edges().items()) if _in_shared_dsl(a)
             for b in sorted(targets) if b.startswith("frontend") and not _in_shared_dsl(b)]
    assert not found, f"{SHARED_DSL} must import nothing else from frontend:\n" + "\n".join(found)


def test_only_mlir_bridge_imports_the_mlir_bindings():
    found = sorted(m for m, names in GRAPH.external.items() if "mlir" in names and not m.startswith("mlir_bridge"))
    assert not found, "modules outside mlir_bridge importing mlir: " + ", ".join(found)


def test_folders_are_small():
    sizes: dict[Path, int] = {}
    for path in GRAPH.paths.values():
        sizes[path.parent] = sizes.get(path.parent, 0) + 1
    big = [f"{p.relative_to(ROOT)}: {n} modules" for p, n in sorted(sizes.items()) if n > MAX_FOLDER_MODULES]
    assert not big, f"folders with more than {MAX_FOLDER_MODULES} modules:\n" + "\n".join(big)


def test_at_most_one_lazy_ring():
    rings = strongly_connected(GRAPH.edges())
    unexpected = [r for r in rings if frozenset(r) != ALLOWED_LAZY_RING]
    assert not unexpected, ("import rings through function-level imports (only ALLOWED_LAZY_RING may exist):\n"
                            + _describe(unexpected))


def test_analysis_finds_what_it_looks_for():
    """The checks above can fail: a ring, an upward import and a lazy import are recognised."""
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []
    tree = ast.parse("import x\nif T:\n    import y\ndef f():\n    import z\nclass C:\n    import w\n")
    assert [(n.names[0].name, top) for n, top in _imports(tree)] == [("x", True), ("y", True), ("z", False),
                                                                      ("w", True)]
    g = ImportGraph(paths={m: ROOT for m in ("lowering.a", "frontend.b", "frontend.format.c")},
                    module_level={"lowering.a": {"frontend.b", "frontend.format.c"}, "frontend.b": set(),
                                  "frontend.format.c": set()},
                    lazy={"lowering.a": set(), "frontend.b": set(), "frontend.format.c": set()})
    assert upward_imports(g) == ["lowering.a -> frontend.b"]
    node = ast.parse("from .sub import name").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _targets("pkg.mod", False, node, {"pkg.sub"}) == ["pkg.sub"]
    assert _targets("pkg", True, node, {"pkg.sub", "pkg.sub.name"}) == ["pkg.sub.name"]
