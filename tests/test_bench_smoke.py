"""Every bench runs, at a tiny size: an API change that breaks a bench fails CI, not the next
person who wants a figure.

The scripts are found by listing `bench/` (helpers start with `_`), so a new bench is covered
the day it lands. Each runs in a subprocess with `--smoke` (seconds, no figure asserted) on the
suite's PostgreSQL and valkey: in a scratch database of its own, which it must drop (its name
carries the bench's process id), never in the database it was configured with.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

BASE_DIR = Path(__file__).resolve().parents[1]
BENCH_DIR = BASE_DIR / "bench"
BENCHES = sorted(path for path in BENCH_DIR.glob("*.py") if not path.name.startswith("_"))
SMOKE_TIMEOUT_S = 540


def _env() -> dict[str, str]:
    """The suite's services; the benches run with the production pool and no test app."""
    env = {k: v for k, v in os.environ.items() if k not in {"ERP_TESTING", "DB_POOL_MAX_SIZE"}}
    env.update(BENCH_POSTGRES_URL=os.environ["DATABASE_URL"], PYTHONUNBUFFERED="1")
    return env


def _databases_of(pid: int) -> list[str]:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", [f"%\\_{pid}\\_%"]
        ).fetchall()
    return [row[0] for row in rows]


def test_the_bench_folder_holds_benches() -> None:
    names = {path.name for path in BENCHES}

    assert {"kb_search.py", "kb_search_skewed.py", "pipeline.py", "webhook_load.py"} <= names


@pytest.mark.timeout(SMOKE_TIMEOUT_S + 60)
@pytest.mark.parametrize("script", BENCHES, ids=[path.stem for path in BENCHES])
def test_bench_runs_at_smoke_size(script: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, str(script), "--smoke"],
        cwd=BASE_DIR,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = process.communicate(timeout=SMOKE_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)

    assert process.returncode == 0, output[-4000:]
    assert output.strip(), "the bench printed nothing"
    assert _databases_of(process.pid) == []  # its scratch database was dropped


def test_a_bench_refuses_a_database_it_did_not_create(db: None) -> None:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        import _harness
    finally:
        sys.path.remove(str(BENCH_DIR))

    with pytest.raises(RuntimeError, match="refusing to run on database"):
        _harness.assert_scratch()  # the suite's database: not a scratch one of a bench
    _harness._scratch["name"] = f"bench_{uuid.uuid4().hex}"
    try:
        with pytest.raises(RuntimeError, match="refusing to run on database"):
            _harness.assert_scratch()
    finally:
        _harness._scratch.pop("name")


@pytest.mark.timeout(SMOKE_TIMEOUT_S + 60)
def test_the_pipeline_bench_counts_instructions_per_message() -> None:
    """`--instructions`: the sequential run again under callgrind, counting only its messages
    (the figure an A/B of two trees compares, whatever the machine's load)."""
    output = subprocess.run(
        [sys.executable, str(BENCH_DIR / "pipeline.py"), "--smoke", "--instructions"],
        cwd=BASE_DIR,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=SMOKE_TIMEOUT_S,
    ).stdout

    match = re.search(
        r"instructions per message \(callgrind, 3 counted\): process\s+([\d.]+) M", output
    )
    assert match, output[-4000:]
    # A message of the engine runs millions of instructions; the callgrind_control calls that
    # open and close the window, tens of thousands: counting covered the messages.
    assert 1 < float(match.group(1)) < 1000, output[-4000:]
