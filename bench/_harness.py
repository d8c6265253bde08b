"""What the benches share (run as scripts: `bench/` is on sys.path, so `import _harness`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit


def percentile(values: list[float], q: float) -> float:
    """The value at fraction `q` (0..1) of the sorted values (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, so a bench killed by `timeout` still cleans up."""

    def handler(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Scratch:
    """What a bench starts around the code it measures, stopped by `stop()` (also after
    Ctrl-C): a scratch database `db_name` on the embedded PostgreSQL under `data_dir`, a valkey
    of its own, and the fake external APIs in a forked process (`serve(conn, *args)` sends its
    URLs through the pipe, then answers until it receives "stop")."""

    def __init__(self, *, data_dir: Path, db_name: str) -> None:
        self.data_dir = data_dir
        self.db_name = db_name
        self.admin_url = ""
        self.db_created = False
        self.redis: subprocess.Popen[bytes] | None = None
        self.redis_dir: Path | None = None
        self.fakes: Any = None
        self.fakes_conn: Any = None

    def start(self, serve: Callable[..., None], *args: Any) -> tuple[dict[str, str], Any]:
        """(the environment every bench process needs, what `serve` sent first)."""
        import psycopg

        from erp import embedded

        self.admin_url = embedded.ensure_postgres(self.data_dir / "postgres", cleanup_mode="stop")
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {self.db_name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {self.db_name}")
        self.db_created = True
        db_url = urlunsplit(urlsplit(self.admin_url)._replace(path=f"/{self.db_name}"))
        self.redis_dir = Path(tempfile.mkdtemp(prefix=f"{self.db_name}-redis-"))
        self.redis = embedded.start_redis(self.redis_dir, new_session=True)
        parent_end, child_end = multiprocessing.Pipe()
        self.fakes = multiprocessing.get_context("fork").Process(
            target=serve, args=(child_end, *args), daemon=True
        )
        self.fakes.start()
        self.fakes_conn = parent_end
        urls = parent_end.recv()
        env = {
            "DATABASE_URL": db_url,
            "REDIS_URL": embedded.redis_url(self.redis_dir),
            "ERP_EMBEDDED": "1",  # development secret key from the data dir
            "ERP_DATA_DIR": str(self.data_dir),
            "AI_CREDITS_MODE": "enforce",
            "LOG_LEVEL": "WARNING",
        }
        return env, urls

    def ask(self, command: str) -> Any:
        """Sends `command` to the fakes' process and returns its answer."""
        self.fakes_conn.send(command)
        return self.fakes_conn.recv()

    def stop(self) -> None:
        if self.fakes is not None:
            with contextlib.suppress(Exception):
                self.fakes_conn.send("stop")
            self.fakes.join(timeout=5)
            if self.fakes.is_alive():
                self.fakes.kill()
        if self.db_created:
            import psycopg

            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {self.db_name} WITH (FORCE)")
        if self.redis is not None:
            self.redis.terminate()
            try:
                self.redis.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.redis.kill()
        if self.redis_dir is not None:
            shutil.rmtree(self.redis_dir, ignore_errors=True)


def connect_as(user: str, password: str = "") -> None:
    """The default database's next connections use this role (open ones are closed)."""
    from django.conf import settings
    from django.db import connections

    connection = connections["default"]
    connection.close()
    if connection.settings_dict["OPTIONS"].get("pool"):
        connection.close_pool()  # the pool keeps the role it was opened with
    for entry in (connection.settings_dict, settings.DATABASES["default"]):
        entry["USER"], entry["PASSWORD"] = user, password


def connect_as_app_role() -> tuple[str, str]:
    """From here on the bench connects as the application's role, as the web and worker
    processes do, so row-level security is part of what it measures (setup, COPY and cleanup
    ran as the owner). Returns the owner's (user, password), for `connect_as` afterwards."""
    from django.conf import settings
    from django.db import connections

    owner = connections["default"].settings_dict
    previous = (str(owner["USER"]), str(owner["PASSWORD"]))
    connect_as(settings.DATABASE_APP_ROLE, settings.DATABASE_APP_PASSWORD)
    return previous


def app_role_url() -> str:
    """DATABASE_URL with the application's role, for the bench's child processes."""
    from django.conf import settings

    from erp.env import database_url_as

    return database_url_as(
        str(settings.DATABASE_URL), settings.DATABASE_APP_ROLE, settings.DATABASE_APP_PASSWORD
    )
