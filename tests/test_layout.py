"""The layout rules of docs/architecture.md that can be checked mechanically.

Every import is seen: at module level, inside functions and under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import possibly

SRC = Path(possibly.__file__).parent


class Import(NamedTuple):
    module: str  # the importing module
    target: str  # the module imported from (a module of the package)
    name: str | None  # the name taken from it (None for ``import target``)
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """Every import of a module of the package in ``path``, wherever it sits in the file."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [Import(name, a.name, None, node.lineno) for a in node.names
                      if a.name in modules]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                if f"{mod}.{a.name}" in modules:  # ``from package import module``
                    found.append(Import(name, f"{mod}.{a.name}", None, node.lineno))
                elif mod in modules:
                    found.append(Import(name, mod, a.name, node.lineno))
    return found


def _all_imports() -> list[Import]:
    modules = _modules()
    return [imp for name, path in modules.items() for imp in _imports(name, path, modules)]


def _package(module: str, modules: dict[str, Path]) -> str:
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def test_the_checker_sees_imports_inside_functions_and_type_checking_blocks(tmp_path):
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from possibly.inference import combine\n"
              "def f():\n    from possibly.validation import as_finite\n"
              "    from possibly.filters import KalmanFilter\n")
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    got = {i.target for i in _imports("possibly.filters.probe", path, _modules())}
    assert got == {"possibly.inference", "possibly.validation", "possibly.filters"}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (module -> modules it imports), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"pkg": {"pkg.mod"}, "pkg.mod": {"pkg"}}) == ["pkg", "pkg.mod", "pkg"]


def test_no_import_cycle_between_modules():
    """No cycle, counting imports inside functions and type-checking blocks. An explicit import
    of a module's own package (``from possibly.filters import X`` inside ``filters/``) counts:
    the package's ``__init__`` imports its modules, so that is a cycle too."""
    graph: dict[str, set[str]] = {name: set() for name in _modules()}
    for imp in _all_imports():
        if imp.target != imp.module:
            graph[imp.module].add(imp.target)
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_imports_another_modules_private_names():
    """A private (``_underscore``) name is used only in its module; shared private helpers
    live in their package's ``_common`` module."""
    modules = _modules()
    bad = [f"{i.module}:{i.line} imports {i.target}.{i.name}" for i in _all_imports()
           if i.name and i.name.startswith("_") and not i.name.startswith("__")
           and not i.target.endswith("._common")]
    assert not bad, bad
    assert modules  # the walk found the package


def test_common_modules_are_not_imported_from_another_package():
    modules = _modules()
    bad = [f"{i.module}:{i.line} imports {i.target}" for i in _all_imports()
           if i.target.endswith("._common")
           and _package(i.module, modules) != i.target.rpartition(".")[0]]
    assert not bad, bad


def test_no_two_modules_share_a_name():
    """Module names say one thing once (the private ``_common`` of each package excepted)."""
    names = Counter(name.rpartition(".")[2] for name, path in _modules().items()
                    if path.name != "__init__.py" and not name.endswith("._common"))
    assert [n for n, count in names.items() if count > 1] == []


def test_source_comments_cite_the_repository_math_note():
    """Comments cite docs/math.md (in the repository), never a file outside it."""
    bad = []
    for path in SRC.rglob("*.py"):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"(?<!docs/)MATH\.md", line):
                bad.append(f"{path.relative_to(SRC)}:{i}")
    assert not bad, bad
    assert (SRC.parents[1] / "docs" / "math.md").is_file()


def test_module_docstrings_are_short_and_carry_no_history():
    """A module docstring says what and why in a few lines: no issue numbers, no timings."""
    bad = []
    for name, path in _modules().items():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if re.search(r"\bissue\s+\d+|#\d{2,}", doc):
            bad.append(f"{name}: issue number")
        prose = doc.split("\nExamples\n--------")[0].splitlines()  # a doctest may follow
        if len(prose) > 25:
            bad.append(f"{name}: {len(prose)} lines")
    assert not bad, bad


def test_tests_mirror_the_source_tree():
    """Every test folder is a package (or root module) of the source tree."""
    tests = Path(__file__).parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    assert folders <= packages, folders - packages
