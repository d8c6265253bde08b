"""The size rules (erp/codesize.py) hold on the real tree, and each rule fires on a fake one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from erp import codesize

BASE_DIR = Path(__file__).resolve().parents[2]


def _write(base: Path, rel: str, text: str) -> None:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _function(name: str, *, params: str = "", body_lines: int = 1, decorator: str = "") -> str:
    """A function of `body_lines + 1` lines (decorator not counted)."""
    head = f"{decorator}\n" if decorator else ""
    return head + f"def {name}({params}):\n" + "    x = 1\n" * body_lines + "\n"


def test_the_real_tree_keeps_the_size_rules() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "erp.codesize"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.stdout == "code size: ok\n"
    assert result.returncode == 0


def test_no_allowance_outlives_its_violation() -> None:
    assert codesize.stale_allowances() == []


def test_each_rule_fires_on_a_fake_tree(tmp_path: Path) -> None:
    _write(tmp_path, "erp/big.py", "x = 1\n" * 451)
    _write(tmp_path, "erp/fits.py", "x = 1\n" * 450)
    _write(tmp_path, "ai_agents/long.py", _function("long", body_lines=60))
    _write(tmp_path, "ai_agents/short.py", _function("short", body_lines=59))
    _write(tmp_path, "correo/params.py", _function("five", params="a, b, c, d, e"))
    _write(tmp_path, "correo/ok.py", _function("four", params="a, b, c, d, *, e, f"))

    assert codesize.violations(tmp_path) == [
        "erp/big.py: module has 451 lines",
        "ai_agents/long.py:1: function long has 61 lines",
        "correo/params.py:1: function five has 5 positional parameters",
    ]


def test_methods_tests_and_fixtures_do_not_count_what_they_take_by_design(tmp_path: Path) -> None:
    method = "class C:\n    def m(self, a, b, c, d):\n        pass\n"
    fixture = _function("tenant", params="a, b, c, d, e", decorator="@pytest.fixture")
    fixture_call = _function("page", params="a, b, c, d, e", decorator="@pytest.fixture(scope='x')")
    test = _function("test_it", params="a, b, c, d, e", body_lines=61)
    _write(tmp_path, "erp/tests/test_x.py", method + fixture + fixture_call + test)
    _write(tmp_path, "erp/migrations/0001_initial.py", "x = 1\n" * 1000)
    _write(tmp_path, "bench/big.py", "x = 1\n" * 1000)

    assert codesize.violations(tmp_path) == [
        f"erp/tests/test_x.py:{len((method + fixture + fixture_call).splitlines()) + 1}: "
        "function test_it has 62 lines",
    ]


def test_an_allowance_excuses_its_violation_until_it_is_fixed(tmp_path: Path) -> None:
    _write(tmp_path, "erp/tests/test_browser.py", _function("test_scenario", body_lines=70))
    allowed = {"erp/tests/test_browser.py::test_scenario": "one browser scenario"}

    assert codesize.violations(tmp_path, allowed=allowed) == []
    assert codesize.stale_allowances(tmp_path, allowed=allowed) == []

    _write(tmp_path, "erp/tests/test_browser.py", _function("test_scenario", body_lines=10))
    assert codesize.stale_allowances(tmp_path, allowed=allowed) == list(allowed)
