"""Module boundaries and import cycles.

Two checks, run as `python -m erp.boundaries` (CI) and from the test suite
(`erp/tests/test_boundaries.py`); exit 1 with every problem listed:

- Direction: `erp` imports neither app; `correo` and `ai_agents` do not import each other.
- Cycles: no import cycle between the modules of `ai_agents`, nor of `correo` (`erp` is not
  checked yet: `erp.llm.models` and `erp.llm.usage` import each other). An import placed
  inside a function counts like one at the top of the file: it only hides the cycle from
  Python's loader, not from the reader who has to know both modules to understand either.
  `from ai_agents.x import y` counts as an import of the submodule `ai_agents.x.y` when that
  file exists, else of `ai_agents.x`. Imports under `if TYPE_CHECKING:` do not count: they
  never run and exist only for annotations. Importing `a.b.c` is an edge to `a.b.c` alone, not
  to the packages `a` and `a.b` whose `__init__` Python also runs, so a package `__init__` that
  re-exports its modules (`ai_agents.models`) is not in a cycle with each of them. Tests are
  left out.

Every cycle is reported as one strongly connected component: its modules, one shortest cycle
through them as a path, and the imports (file:line) that tie them together.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# (package, forbidden import prefixes)
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("erp", ("ai_agents", "correo")),
    ("correo", ("ai_agents",)),
    ("ai_agents", ("correo",)),
]

# Packages whose modules must not import each other in a circle.
ACYCLIC_PACKAGES: tuple[str, ...] = ("ai_agents", "correo")


@dataclass(frozen=True)
class Import:
    """One import statement's target, as written (absolute, relative ones resolved)."""

    lineno: int
    module: str
    names: tuple[str, ...] = ()


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _walk_runtime(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below `node`, function bodies included, skipping `if TYPE_CHECKING:` bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _walk_runtime(other)
            continue
        yield child
        yield from _walk_runtime(child)


def _package_of(path: Path, base_dir: Path) -> list[str]:
    """The dotted package that holds `path`, as parts (what a relative import starts from)."""
    return list(path.relative_to(base_dir).parent.parts)


def module_name(path: Path, base_dir: Path) -> str:
    parts = list(path.relative_to(base_dir).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def file_imports(path: Path, base_dir: Path = BASE_DIR) -> list[Import]:
    """The runtime imports of one file (top level and inside functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[Import] = []
    for node in _walk_runtime(tree):
        if isinstance(node, ast.Import):
            found.extend(Import(node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                package = _package_of(path, base_dir)
                anchor = package[: len(package) - (node.level - 1)]
                module = ".".join([*anchor, *([module] if module else [])])
            names = tuple(alias.name for alias in node.names)
            found.append(Import(node.lineno, module, names))
    return found


def violations(base_dir: Path = BASE_DIR) -> list[str]:
    problems: list[str] = []
    for package, forbidden in RULES:
        for path in sorted((base_dir / package).rglob("*.py")):
            for imp in file_imports(path, base_dir):
                module = imp.module
                if any(module == f or module.startswith(f + ".") for f in forbidden):
                    rel = path.relative_to(base_dir)
                    problems.append(f"{rel}:{imp.lineno}: {package} must not import {module}")
    return problems


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    location: str  # "path:line" of the import in `source`


def _targets(imp: Import, modules: set[str]) -> set[str]:
    """The modules of the tree one import loads by name: `from a import b` is `a.b` when that is
    a module, else `a`; a name that is no module file resolves to its longest existing prefix."""
    targets: set[str] = set()
    candidates = [f"{imp.module}.{name}" for name in imp.names] or [imp.module]
    for candidate in candidates:
        while candidate and candidate not in modules:
            candidate = candidate.rpartition(".")[0]
        if candidate:
            targets.add(candidate)
    return targets


def import_graph(package: str, base_dir: Path = BASE_DIR) -> dict[str, list[Edge]]:
    """Module -> its import edges to other modules of `package` (tests excluded)."""
    paths = [p for p in sorted((base_dir / package).rglob("*.py")) if "tests" not in p.parts]
    modules = {module_name(p, base_dir) for p in paths}
    graph: dict[str, list[Edge]] = {m: [] for m in modules}
    for path in paths:
        source = module_name(path, base_dir)
        rel = path.relative_to(base_dir)
        for imp in file_imports(path, base_dir):
            for target in sorted(_targets(imp, modules)):
                if target != source:
                    graph[source].append(Edge(source, target, f"{rel}:{imp.lineno}"))
    return graph


def strongly_connected(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on deep graphs); components of more
    than one module, each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = sorted({edge.target for edge in graph[node]})
            for i in range(position, len(successors)):
                succ = successors[i]
                if succ not in index:
                    work.append((node, i + 1))
                    work.append((succ, 0))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return sorted(components)


def shortest_cycle(graph: dict[str, list[Edge]], component: list[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for edge in graph[node]:
            if edge.target not in members:
                continue
            if edge.target == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if edge.target not in previous:
                previous[edge.target] = node
                queue.append(edge.target)
    return [start]  # unreachable for a real component


def cycles(base_dir: Path = BASE_DIR) -> list[str]:
    """One report block per import cycle in ACYCLIC_PACKAGES (empty when there is none)."""
    reports: list[str] = []
    for package in ACYCLIC_PACKAGES:
        graph = import_graph(package, base_dir)
        for component in strongly_connected(graph):
            members = set(component)
            lines = [
                f"import cycle of {len(component)} modules: "
                + " -> ".join(shortest_cycle(graph, component))
            ]
            for module in component:
                lines.extend(
                    f"    {edge.location}: {module} imports {edge.target}"
                    for edge in graph[module]
                    if edge.target in members
                )
            reports.append("\n".join(lines))
    return reports


def main() -> None:
    problems = violations()
    found_cycles = cycles()
    for problem in [*problems, *found_cycles]:
        print(problem)
    if problems or found_cycles:
        sys.exit(1)
    print("module boundaries: ok; import cycles: none")


if __name__ == "__main__":
    main()
