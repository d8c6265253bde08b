"""The boundary checker (`python -m erp.boundaries`): the real tree passes, and the checker itself
finds what it promises on a small fake tree."""

from __future__ import annotations

import textwrap
from pathlib import Path

from erp import boundaries


def write_tree(base: Path, files: dict[str, str]) -> Path:
    for relative, source in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return base


def test_the_repository_has_no_forbidden_import() -> None:
    assert boundaries.violations() == []


def test_the_repository_has_no_import_cycle() -> None:
    found = boundaries.cycles()
    assert found == [], "\n".join(found)


def test_a_cycle_through_a_function_level_import_is_reported_as_a_path(tmp_path: Path) -> None:
    # given: a -> b at the top, b -> a hidden inside a function
    base = write_tree(
        tmp_path,
        {
            "ai_agents/__init__.py": "",
            "ai_agents/a.py": "from ai_agents import b\n",
            "ai_agents/b.py": """\
                def later():
                    from ai_agents.a import thing
                    return thing
            """,
            "ai_agents/c.py": "import ai_agents.a\n",
        },
    )

    # when
    reports = boundaries.cycles(base)

    # then: one cycle, c (which only imports into it) is not part of it
    assert reports == [
        "import cycle of 2 modules: ai_agents.a -> ai_agents.b -> ai_agents.a\n"
        "    ai_agents/a.py:1: ai_agents.a imports ai_agents.b\n"
        "    ai_agents/b.py:2: ai_agents.b imports ai_agents.a"
    ]


def test_type_checking_imports_and_relative_imports(tmp_path: Path) -> None:
    base = write_tree(
        tmp_path,
        {
            "ai_agents/__init__.py": "",
            "ai_agents/pkg/__init__.py": "",
            "ai_agents/pkg/x.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from ai_agents.pkg.y import Y
                else:
                    from . import z
            """,
            "ai_agents/pkg/y.py": "from .x import something\n",
            "ai_agents/pkg/z.py": "from ..pkg import x\n",
        },
    )

    # then: x -> y is annotation-only; the `else` branch and relative imports do count
    graph = boundaries.import_graph("ai_agents", base)
    assert sorted(edge.target for edge in graph["ai_agents.pkg.x"]) == ["ai_agents.pkg.z"]
    assert [edge.target for edge in graph["ai_agents.pkg.y"]] == ["ai_agents.pkg.x"]
    assert boundaries.cycles(base) == [
        "import cycle of 2 modules: ai_agents.pkg.x -> ai_agents.pkg.z -> ai_agents.pkg.x\n"
        "    ai_agents/pkg/x.py:6: ai_agents.pkg.x imports ai_agents.pkg.z\n"
        "    ai_agents/pkg/z.py:1: ai_agents.pkg.z imports ai_agents.pkg.x"
    ]


def test_three_module_cycle_is_one_component_and_tests_are_left_out(tmp_path: Path) -> None:
    base = write_tree(
        tmp_path,
        {
            "ai_agents/__init__.py": "",
            "ai_agents/a.py": "import ai_agents.b\n",
            "ai_agents/b.py": "import ai_agents.c\n",
            "ai_agents/c.py": "def f():\n    import ai_agents.a\n",
            "ai_agents/tests/test_a.py": "import ai_agents.a\nimport ai_agents.tests.test_a\n",
        },
    )

    graph = boundaries.import_graph("ai_agents", base)

    assert boundaries.strongly_connected(graph) == [["ai_agents.a", "ai_agents.b", "ai_agents.c"]]
    assert "ai_agents.tests.test_a" not in graph


def test_ai_agents_must_not_import_correo(tmp_path: Path) -> None:
    base = write_tree(
        tmp_path,
        {
            "erp/__init__.py": "",
            "correo/__init__.py": "",
            "ai_agents/__init__.py": "",
            "ai_agents/mail.py": "def f():\n    from correo.html_text import html_to_text\n",
        },
    )

    assert boundaries.violations(base) == [
        "ai_agents/mail.py:2: ai_agents must not import correo.html_text"
    ]
