"""Starts the test services before Django reads its settings.

Unless DATABASE_URL / REDIS_URL are set, one embedded PostgreSQL (var/test-postgres) and one
valkey-server (var/test-redis) run for the whole session; their URLs are exported so that
settings, pytest-django (which creates `test_postgres`) and any Celery worker process the
tests start all see the same services. They stop when the session ends.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_started: dict[str, Any] = {}


def _data_dir() -> Path:
    base = Path(os.environ.get("ERP_DATA_DIR") or Path(__file__).resolve().parents[2] / "var")
    return base.resolve()


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: Any, parser: Any, args: Any
) -> Generator[None, None, None]:
    # A wrapper runs before pytest-django's own hook, which calls django.setup().
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        _start_services()
    return (yield)


def _start_services() -> None:
    from erp import embedded

    os.environ.setdefault("ERP_TESTING", "1")  # installs erp.testing.testapp
    data = _data_dir()
    if not os.environ.get("DATABASE_URL"):
        pgdata = data / "test-postgres"
        pgdata.mkdir(parents=True, exist_ok=True)
        os.environ["DATABASE_URL"] = embedded.ensure_postgres(pgdata, cleanup_mode="stop")
        _started["postgres"] = pgdata
    if not os.environ.get("REDIS_URL"):
        redis_dir = data / "test-redis"
        _started["redis"] = embedded.start_redis(redis_dir, new_session=False)
        os.environ["REDIS_URL"] = embedded.redis_url(redis_dir)
        _redis_empty(os.environ["REDIS_URL"])
    os.environ.setdefault("SECRET_KEY", "test-secret-key")
    # Tests open connections from short-lived threads (concurrency tests) that Django never
    # hands back to a pool, so the suite runs without one; `make run` (test_run.py) and the
    # benches run with the production pool.
    os.environ.setdefault("DB_POOL_MAX_SIZE", "0")


def _redis_empty(url: str) -> None:
    """The suite's own valkey starts empty: it keeps its data on disk between runs, while
    each run's database starts anew, its ids from 1 again; a key of an earlier run (a parked
    WhatsApp status, a cached binding: keyed by tenant or row ids) would meet this run's rows
    (seen: a status parked by an earlier run moved a delivery of this one)."""
    import redis

    redis.Redis.from_url(url).flushall()


def pytest_unconfigure(config: Any) -> None:
    redis = _started.pop("redis", None)
    if redis is not None:
        redis.terminate()
        try:
            redis.wait(timeout=10)
        except Exception:
            redis.kill()
    # The embedded PostgreSQL handle (cleanup_mode="stop") stops the server at exit.
