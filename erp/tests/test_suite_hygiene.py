"""The test code itself keeps the rules that make the suite trustworthy (read, not run):

- no `assert a or b`: the second operand lets a wrong first one pass;
- no `thread.join()` or `threading.Barrier(n)` without a deadline (`erp.testing.deadlines`);
- no polling loop (`while` around `time.sleep`) without a deadline in its condition.

A violation is reported as file:line, so the fix is one look away.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
ROOTS = ("erp", "ai_agents", "correo", "tests")  # pyproject testpaths


def _test_code() -> Iterator[tuple[Path, ast.Module]]:
    for root in ROOTS:
        for path in sorted((BASE_DIR / root).rglob("*.py")):
            parts = path.relative_to(BASE_DIR).parts
            if "tests" in parts or "testing" in parts:
                yield path, ast.parse(path.read_text(encoding="utf-8"))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(BASE_DIR)}:{getattr(node, 'lineno', '?')}"


def _is_sleep(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "sleep"
    )


def _names(node: ast.AST) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def violations(path: Path, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        where = _where(path, node)
        if (
            isinstance(node, ast.Assert)
            and isinstance(node.test, ast.BoolOp)
            and isinstance(node.test.op, ast.Or)
        ):
            found.append(f"{where}: `assert a or b` cannot fail on a wrong a")
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else None
            called = node.func.id if isinstance(node.func, ast.Name) else called
            if called == "join" and not node.args and not node.keywords:
                found.append(f"{where}: join() without a timeout")
            if called == "Barrier" and not any(k.arg == "timeout" for k in node.keywords):
                found.append(f"{where}: Barrier without a timeout")
        # A loop that sleeps must name its deadline somewhere (condition or an exit inside).
        if (
            isinstance(node, ast.While)
            and any(_is_sleep(n) for n in ast.walk(node))
            and not _names(node) & {"deadline", "monotonic"}
        ):
            found.append(f"{where}: polling loop without a deadline")
    return sorted(found, key=lambda problem: int(problem.split(":")[1]))


def test_test_code_has_deadlines_and_no_assertion_that_cannot_fail() -> None:
    scanned = list(_test_code())
    assert len(scanned) > 50  # the walk found the suite

    problems = [problem for path, tree in scanned for problem in violations(path, tree)]

    assert problems == []


def test_the_checks_catch_what_they_name(tmp_path: Path) -> None:
    source = (
        "import threading, time\n"
        "def test_x(t, response):\n"
        "    assert response.ok or response.json()['error']\n"
        "    t.join()\n"
        "    b = threading.Barrier(2)\n"
        "    while not t.done:\n"
        "        time.sleep(0.1)\n"
        "def test_fine(t, deadline):\n"
        "    assert (t.error or '') == ''\n"
        "    t.join(timeout=5)\n"
        "    b = threading.Barrier(2, timeout=5)\n"
        "    while not t.done and time.monotonic() < deadline:\n"
        "        time.sleep(0.1)\n"
        "    ', '.join(['a'])\n"
    )
    path = BASE_DIR / "erp" / "tests" / "sample.py"  # only its name is used in the report

    found = violations(path, ast.parse(source))

    assert found == [
        "erp/tests/sample.py:3: `assert a or b` cannot fail on a wrong a",
        "erp/tests/sample.py:4: join() without a timeout",
        "erp/tests/sample.py:5: Barrier without a timeout",
        "erp/tests/sample.py:6: polling loop without a deadline",
    ]
