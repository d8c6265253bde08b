""".ci/run fails, instead of warning, when the browser tests could not run: no Chromium at the
path they use and none installable, or one there that does not start. Every command it could
reach after that (apt-get, make) is a stub on PATH that fails loudly, so nothing is installed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]


def _stub(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def run_ci(tmp_path: Path, chromium: Path) -> subprocess.CompletedProcess[str]:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    _stub(stubs, "apt-get", 'echo "apt-get $*" >> "$(dirname "$0")/calls"; exit 100')
    _stub(stubs, "make", 'echo "make $*" >> "$(dirname "$0")/calls"; exit 99')
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "CHROMIUM_PATH": str(chromium)}
    return subprocess.run(
        ["bash", str(BASE_DIR / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_no_chromium_and_no_way_to_install_it_fails_the_run(tmp_path: Path) -> None:
    result = run_ci(tmp_path, tmp_path / "no-chromium")

    assert result.returncode == 100  # apt-get's failure ends the run (set -e)
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert calls == ["apt-get -o DPkg::Lock::Timeout=300 update -qq"]
    assert "=== install ===" not in result.stdout


def test_a_chromium_that_does_not_start_fails_the_run(tmp_path: Path) -> None:
    broken = _stub(tmp_path, "chromium", "exit 3")

    result = run_ci(tmp_path, broken)

    assert result.returncode == 1
    assert f"error: no working Chromium at {broken}" in result.stderr
    assert not (tmp_path / "bin" / "calls").exists()  # neither apt-get nor make ran
    assert "=== install ===" not in result.stdout


def test_a_working_chromium_is_checked_then_the_run_goes_on(tmp_path: Path) -> None:
    working = _stub(tmp_path, "chromium", 'echo "Chromium 156.0 (stub) $*"')

    result = run_ci(tmp_path, working)

    assert result.returncode == 99  # the stub make: the run got past the Chromium check
    assert "Chromium 156.0 (stub) --headless --no-sandbox --version" in result.stdout
    assert (tmp_path / "bin" / "calls").read_text().splitlines() == ["make install-dev"]
