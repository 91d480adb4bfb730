"""The layout rules of docs/architecture.md that can be checked mechanically."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import possibly

SRC = Path(possibly.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Modules of the package imported at module level (not inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found = set()
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        for target in targets:
            if target in modules and target != name:
                found.add(target)
    return found


def test_no_import_cycle_between_modules():
    """Module-level imports form no cycle (a package's __init__ re-exporting is not one)."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        deps = _imports(path, name, modules)
        # edges into a package __init__ only re-export; follow them unless it is an ancestor
        graph[name] = {d for d in deps if not name.startswith(d + ".") and d != "possibly"}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_source_comments_cite_the_repository_math_note():
    """Comments cite docs/math.md (in the repository), never a file outside it."""
    bad = []
    for path in SRC.rglob("*.py"):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"(?<!docs/)MATH\.md", line):
                bad.append(f"{path.relative_to(SRC)}:{i}")
    assert not bad, bad
    assert (SRC.parents[1] / "docs" / "math.md").is_file()
