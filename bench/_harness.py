"""What the benches share (run as scripts: `bench/` is on sys.path, so `import _harness`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# Set by `scratch_database` / `Scratch`: the only database a bench may write to.
_scratch: dict[str, str] = {}


def scratch_name(prefix: str) -> str:
    """A database name no one else uses: a bench never reuses (nor drops) one it finds."""
    return f"{prefix}_{os.getpid()}_{secrets.token_hex(3)}"


def assert_scratch() -> None:
    """Refuses to go on unless Django's default connection is on this bench's scratch
    database: a bench that measured the developer's data (or dropped it) once is enough."""
    from django.db import connections

    expected = _scratch.get("name")
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT current_database()")
        (current,) = cursor.fetchone()
    if expected is None or current != expected:
        raise RuntimeError(
            f"refusing to run on database {current!r}: this bench only writes to the scratch "
            f"database it created ({expected!r})"
        )


def _reconnect(**changes: str) -> None:
    """Django's next connections use `changes` (NAME, USER, PASSWORD): the open connection
    AND the pool are closed first (a pool keeps the database and role it was opened with)."""
    from django.conf import settings
    from django.db import connections

    connection = connections["default"]
    connection.close()
    if connection.settings_dict["OPTIONS"].get("pool"):
        connection.close_pool()
    for entry in (connection.settings_dict, settings.DATABASES["default"]):
        entry.update(changes)


def _server_conninfo(settings_dict: dict[str, Any], dbname: str) -> dict[str, Any]:
    return {
        "host": settings_dict["HOST"],
        "port": settings_dict["PORT"] or None,
        "user": settings_dict["USER"],
        "password": settings_dict["PASSWORD"] or None,
        "dbname": dbname,
        "autocommit": True,
    }


@contextlib.contextmanager
def scratch_database(prefix: str, *, migrate: bool = True) -> Iterator[str]:
    """For a bench that runs Django in its own process: a new, uniquely named database on the
    configured server (DATABASE_URL, or the embedded one), created here, migrated, checked to be
    the one connected before anything is written, and dropped at the end (the configured
    database is never written to). `settings.DATABASE_URL` follows it, so the bench's child
    processes (`app_role_url`) connect to it too."""
    import psycopg
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    connection = connections["default"]
    original = {key: str(connection.settings_dict[key]) for key in ("NAME", "USER", "PASSWORD")}
    original_url = str(settings.DATABASE_URL)
    name = scratch_name(prefix)
    admin = _server_conninfo(connection.settings_dict, original["NAME"])
    with psycopg.connect(**admin) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    _scratch["name"] = name
    try:
        _reconnect(NAME=name)
        settings.DATABASE_URL = urlunsplit(urlsplit(original_url)._replace(path=f"/{name}"))
        assert_scratch()
        if migrate:
            call_command("migrate", verbosity=0)
        yield name
    finally:
        _scratch.pop("name", None)
        _reconnect(**original)
        settings.DATABASE_URL = original_url
        with psycopg.connect(**admin) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


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
        self.db_name = scratch_name(db_name)  # unique: never one that existed before
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

        # BENCH_POSTGRES_URL: a server to create the scratch database on (the smoke test
        # gives its own), instead of the embedded one under `data_dir`.
        self.admin_url = os.environ.get("BENCH_POSTGRES_URL") or embedded.ensure_postgres(
            self.data_dir / "postgres", cleanup_mode="stop"
        )
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {self.db_name}")
        self.db_created = True
        _scratch["name"] = self.db_name
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

            _scratch.pop("name", None)

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
    _reconnect(USER=user, PASSWORD=password)
    if "name" in _scratch:
        assert_scratch()


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


def statistics_gather() -> None:
    """ANALYZE the scratch database, as its owner: a running install's tables have the
    statistics autovacuum gathers (after ~50 changed rows, within a minute), a database made a
    few seconds ago has none, and PostgreSQL then plans the engine's prepared statements by
    default guesses (a whole-tenant index scan filtered by conversation, instead of the
    conversation's index) until the first ANALYZE. Call it after the warm-up, as the rows of
    a running install's tables are there by then."""
    import psycopg
    from django.conf import settings

    with psycopg.connect(str(settings.DATABASE_URL), autocommit=True) as conn:
        conn.execute("ANALYZE")


def app_role_url() -> str:
    """DATABASE_URL with the application's role, for the bench's child processes."""
    from django.conf import settings

    from erp.env import database_url_as

    return database_url_as(
        str(settings.DATABASE_URL), settings.DATABASE_APP_ROLE, settings.DATABASE_APP_PASSWORD
    )
