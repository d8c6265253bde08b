"""A real `celery worker` process against the test database and broker.

Use with `transactional_db` (the worker has its own connection: it only sees committed rows).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from erp.celery import app

BASE_DIR = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    s = connection.settings_dict
    host = s["HOST"]
    if host.startswith("/"):
        return f"postgresql://{s['USER']}@/{s['NAME']}?host={host}&port={s['PORT'] or 5432}"
    password = f":{s['PASSWORD']}" if s["PASSWORD"] else ""
    return f"postgresql://{s['USER']}{password}@{host}:{s['PORT'] or 5432}/{s['NAME']}"


@contextmanager
def worker_running(
    tmp_path: Path, *, pool: tuple[str, ...] = ("-P", "solo"), prefix: str = "test", **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """A `celery worker` consuming both queues until the block ends; `proc.log_path` is its
    log. `pool` picks the pool and its slots: solo by default, `("-P", "prefork", "-c", "2")`
    enforces time limits, `("-P", "threads", "-c", "16")` is the real-time worker of `make run`
    and compose (no time limits, concurrent I/O); `env` adds variables."""
    name = f"{prefix}{os.getpid()}-{time.monotonic_ns()}@%h"
    environ = dict(os.environ, DATABASE_URL=_database_url(), LOG_FORMAT="json", **env)
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "celery", "-A", "erp", "worker", "-Q", "realtime,bulk"),
                *pool,
                *("-l", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"),
                *("-n", name),
            ],
            cwd=BASE_DIR,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    destination = name.replace("%h", os.uname().nodename)
    deadline = time.monotonic() + 30
    while not app.control.ping(timeout=0.3, destination=[destination]):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(timeout=10)
            raise RuntimeError(f"worker not ready:\n{log_path.read_text()}")
    proc.log_path = log_path  # type: ignore[attr-defined]  # for the tests that read the log
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def celery_worker_process(
    transactional_db: Any, tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    with worker_running(tmp_path) as proc:
        yield proc
