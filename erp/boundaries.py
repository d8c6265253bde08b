"""Module boundaries: `erp` imports neither app; `correo` uses no `ai_agents` internals.

Run as `python -m erp.boundaries` (CI) and from the test suite. Exit 1 with the offending
imports listed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# (package, forbidden import prefixes)
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("erp", ("ai_agents", "correo")),
    ("correo", ("ai_agents",)),
]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def violations(base_dir: Path = BASE_DIR) -> list[str]:
    problems: list[str] = []
    for package, forbidden in RULES:
        for path in sorted((base_dir / package).rglob("*.py")):
            for lineno, module in imported_modules(path):
                if any(module == f or module.startswith(f + ".") for f in forbidden):
                    rel = path.relative_to(base_dir)
                    problems.append(f"{rel}:{lineno}: {package} must not import {module}")
    return problems


def main() -> None:
    problems = violations()
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print("module boundaries: ok")


if __name__ == "__main__":
    main()
