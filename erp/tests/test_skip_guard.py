"""The suite cannot lie: a test that did not run fails the run unless the allowlist says why,
and a test that hangs fails on its deadline while the rest of the session goes on.

Each case runs pytest in a subprocess on a small project of its own (no Django, no services),
with this repository's plugin and pytest-timeout loaded as pyproject loads them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from erp.testing import skip_guard

BASE_DIR = Path(__file__).resolve().parents[2]

TESTS = """
import pytest

def test_runs():
    assert 1 + 1 == 2

def test_skips_itself():
    pytest.skip("no server here")

@pytest.mark.skipif(True, reason="stale condition")
def test_marked_skipif():
    pass

@pytest.mark.xfail(reason="known bug")
def test_expected_to_fail():
    assert False

def test_listed():
    pytest.skip("needs hardware we do not have")
"""


def run_pytest(
    project: Path, *args: str, allowlist: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    (project / "pytest.ini").write_text(
        "[pytest]\naddopts = -p erp.testing.skip_guard -ra\nskip_allowlist = allow.txt\n"
    )
    if allowlist is not None:
        (project / "allow.txt").write_text(allowlist)
    environ = {k: v for k, v in os.environ.items() if k not in {"ERP_ALLOW_SKIPS", "CI"}}
    # Only the plugins under test: the others (Django, Hypothesis, Faker) take seconds to load.
    environ.update(PYTHONPATH=str(BASE_DIR), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pytest_timeout", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unlisted_skips_and_xfails_fail_the_run_and_listed_ones_do_not(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS)

    result = run_pytest(
        tmp_path, allowlist="# comment\ntest_sample.py::test_listed | no such hardware in CI\n"
    )

    assert result.returncode == 1, result.stdout
    out = result.stdout
    assert "FAILED test_sample.py::test_skips_itself" in out
    assert "ERROR test_sample.py::test_marked_skipif" in out  # skipped in setup: error at setup
    assert "FAILED test_sample.py::test_expected_to_fail" in out
    assert "1 failed, 1 passed, 1 skipped, 1 error" not in out
    assert "2 failed, 1 passed, 1 skipped, 1 error" in out
    assert "NOT ALLOWED test_sample.py::test_skips_itself: Skipped: no server here" in out
    assert "NOT ALLOWED test_sample.py::test_expected_to_fail: xfail: known bug" in out
    assert (
        "allowed     test_sample.py::test_listed: Skipped: needs hardware we do not have "
        "(allowlist: no such hardware in CI)" in out
    )


def test_only_listed_skips_pass_and_patterns_cover_modules(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS)

    result = run_pytest(tmp_path, allowlist="test_sample.py | the whole module, for this test\n")

    assert result.returncode == 0, result.stdout
    assert "1 passed, 3 skipped, 1 xfailed" in result.stdout
    assert "NOT ALLOWED" not in result.stdout


def test_a_module_skipped_at_import_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text("def test_runs():\n    pass\n")
    (tmp_path / "test_gone.py").write_text(
        "import pytest\nmissing = pytest.importorskip('no_such_module_abc')\n"
        "def test_never_collected():\n    pass\n"
    )

    result = run_pytest(tmp_path, allowlist="")

    assert result.returncode == 1, result.stdout
    assert "1 passed, 1 skipped" in result.stdout  # pytest alone would exit 0 here
    assert (
        "NOT ALLOWED test_gone.py: Skipped: could not import 'no_such_module_abc'" in result.stdout
    )


def test_erp_allow_skips_tolerates_and_still_lists_them(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS)

    result = run_pytest(tmp_path, allowlist="", env={"ERP_ALLOW_SKIPS": "1"})

    assert result.returncode == 0, result.stdout
    assert "1 passed, 3 skipped, 1 xfailed" in result.stdout
    assert "4 unlisted skip(s) are tolerated (ERP_ALLOW_SKIPS=1)" in result.stdout


def test_an_entry_without_a_reason_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text("def test_runs():\n    pass\n")

    result = run_pytest(tmp_path, allowlist="test_ok.py::test_runs\n")

    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert "allow.txt:1: expected '<node id or pattern> | <reason>'" in result.stderr


def test_a_hanging_test_fails_at_its_deadline_and_the_session_goes_on(tmp_path: Path) -> None:
    """pytest-timeout with the method this suite uses (signal): the hung test fails, the
    next one still runs, the session's teardown runs."""
    (tmp_path / "test_hang.py").write_text(
        "import threading, time, pytest\n"
        "@pytest.fixture(scope='session')\n"
        "def service():\n"
        "    yield\n"
        "    print('SESSION-TEARDOWN-RAN')\n"
        "def test_hangs(service):\n"
        "    threading.Event().wait()\n"
        "@pytest.mark.timeout(60)\n"
        "def test_after(service):\n"
        "    time.sleep(1.5)\n"
    )
    timeout = "-o", "timeout=1", "-o", "timeout_method=signal", "-s"

    result = run_pytest(tmp_path, *timeout, allowlist="")

    assert result.returncode == 1, result.stdout
    assert "Failed: Timeout (>1.0s) from pytest-timeout" in result.stdout
    assert "1 failed, 1 passed" in result.stdout
    assert "SESSION-TEARDOWN-RAN" in result.stdout


def test_this_suite_runs_with_the_guard_a_deadline_and_a_valid_allowlist(
    request: pytest.FixtureRequest,
) -> None:
    config = request.config
    assert config.pluginmanager.has_plugin("erp.testing.skip_guard")
    assert config.getini("timeout") == "300"
    assert config.getini("timeout_method") == "signal"
    assert config.getini("xfail_strict") is True
    guard = config.stash[skip_guard.GUARD]
    assert guard.allowlist_path == BASE_DIR / ".ci" / "skip-allowlist.txt"
    text = guard.allowlist_path.read_text()
    assert skip_guard.allowlist_parse(text, source="allowlist") == guard.entries


def test_browser_tests_fail_without_chromium_instead_of_skipping(tmp_path: Path) -> None:
    (tmp_path / "test_page.py").write_text(
        "from erp.testing.browser import browser\ndef test_page(browser):\n    browser.new_page()\n"
    )

    result = run_pytest(tmp_path, allowlist="", env={"CHROMIUM_PATH": str(tmp_path / "none")})

    assert result.returncode == 1, result.stdout
    assert f"no Chromium at {tmp_path / 'none'}: `apt-get install chromium`" in result.stdout
    assert "1 error" in result.stdout
    assert "skipped" not in result.stdout
