"""Size rules: small modules, short functions, few positional parameters.

A module of `erp`, `ai_agents` or `correo` (tests included, migrations excluded) has at most
450 lines; a function at most 60 lines (from `def` to its last line, decorators excluded); a
function at most four positional parameters (`self`/`cls` not counted), keyword-only beyond.
Test functions and pytest fixtures receive fixtures as positional parameters by design, so their
parameters are not counted; their length is.

Run as `python -m erp.codesize` (CI) and from the test suite. Exit 1 with the violations listed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PACKAGES = ("erp", "ai_agents", "correo")
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60
MAX_POSITIONAL = 4

# Deliberate exceptions, `path` or `path::function` -> why. The suite fails when an entry no
# longer matches a violation, so the list cannot outlive its reason.
ALLOWED: dict[str, str] = {
    "erp/tenancy/postgres/base.py::_with_scope": (
        "a Django execute wrapper: Django calls it with (execute, sql, params, many, context)"
    ),
}

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _is_fixture(node: _Function) -> bool:
    """True for `@pytest.fixture` and `@pytest.fixture(...)` (also imported bare as `fixture`)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "fixture":
            return True
    return False


def _positional_count(node: _Function) -> int:
    names = [arg.arg for arg in (*node.args.posonlyargs, *node.args.args)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names)


def _function_problems(rel: str, node: _Function) -> list[tuple[str, str]]:
    """(allowance key, message) for each rule the function breaks."""
    key = f"{rel}::{node.name}"
    problems: list[tuple[str, str]] = []
    length = (node.end_lineno or node.lineno) - node.lineno + 1
    if length > MAX_FUNCTION_LINES:
        problems.append((key, f"{rel}:{node.lineno}: function {node.name} has {length} lines"))
    takes_fixtures = node.name.startswith("test_") or _is_fixture(node)
    positional = _positional_count(node)
    if not takes_fixtures and positional > MAX_POSITIONAL:
        message = f"function {node.name} has {positional} positional parameters"
        problems.append((key, f"{rel}:{node.lineno}: {message}"))
    return problems


def module_problems(path: Path, *, base_dir: Path) -> list[tuple[str, str]]:
    """(allowance key, message) for each rule broken by one module or its functions."""
    rel = path.relative_to(base_dir).as_posix()
    text = path.read_text()
    problems: list[tuple[str, str]] = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        problems.append((rel, f"{rel}: module has {lines} lines"))
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            problems.extend(_function_problems(rel, node))
    return problems


def all_problems(base_dir: Path = BASE_DIR) -> list[tuple[str, str]]:
    """Every (allowance key, message) in the packages, allowed or not."""
    problems: list[tuple[str, str]] = []
    for package in PACKAGES:
        for path in sorted((base_dir / package).rglob("*.py")):
            if "migrations" not in path.relative_to(base_dir).parts:
                problems.extend(module_problems(path, base_dir=base_dir))
    return problems


def violations(base_dir: Path = BASE_DIR, *, allowed: dict[str, str] = ALLOWED) -> list[str]:
    return [message for key, message in all_problems(base_dir) if key not in allowed]


def stale_allowances(base_dir: Path = BASE_DIR, *, allowed: dict[str, str] = ALLOWED) -> list[str]:
    """Entries of `allowed` that excuse nothing any more."""
    keys = {key for key, _ in all_problems(base_dir)}
    return sorted(entry for entry in allowed if entry not in keys)


def main() -> None:
    problems = violations()
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print("code size: ok")


if __name__ == "__main__":
    main()
