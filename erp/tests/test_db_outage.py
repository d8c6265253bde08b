"""A database that cannot be reached is a 503 the client may retry (JSON under /api/), and while
it stays down requests are refused at once. The real thing (PostgreSQL killed -9 under the real
web server) is ai_agents/tests/test_faults.py."""

from collections.abc import Iterator

import pytest
from django.test import Client

from erp import db_outage

pytestmark = [pytest.mark.django_db, pytest.mark.urls("erp.tests.urls_errors")]


@pytest.fixture(autouse=True)
def no_outage() -> Iterator[None]:
    db_outage._state.update(suspect=False, up=True, probed_at=0.0)
    yield
    db_outage._state.update(suspect=False, up=True, probed_at=0.0)


def test_an_unreachable_database_is_503_json_with_retry_after():
    response = Client(raise_request_exception=False).get("/api/v1/database-gone")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "database_unavailable"
    assert "server closed" not in response.content.decode()


def test_an_unreachable_database_is_503_on_pages_too():
    response = Client(raise_request_exception=False).get("/database-gone")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"].startswith("text/plain")


def test_while_it_stays_down_requests_are_refused_without_touching_it(monkeypatch, client):
    probes = []

    def probe() -> bool:
        probes.append(1)
        return False

    monkeypatch.setattr(db_outage, "_probe", probe)
    client.get("/api/v1/database-gone")  # the error that reveals the outage

    refused = client.get("/api/v1/tenant")
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "database_unavailable"
    health = client.get("/healthz")
    assert health.status_code == 503
    assert health.json()["checks"]["database"] is False
    assert len(probes) == 1  # one probe serves every request for PROBE_EVERY seconds

    monkeypatch.setattr(db_outage, "_probe", lambda: True)
    db_outage._state["probed_at"] = 0.0
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/v1/tenant").status_code == 401  # served again: auth, not 503
    assert db_outage._state["suspect"] is False


def test_an_unreachable_redis_is_503_json_not_500():
    response = Client(raise_request_exception=False).get("/api/v1/redis-gone")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "service_unavailable"
    assert "valkey.sock" not in response.content.decode()


def test_a_statement_timeout_is_not_an_outage():
    response = Client(raise_request_exception=False).get("/api/v1/statement-timeout")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"
    assert db_outage._state["suspect"] is False


def test_requests_waiting_for_a_pooled_connection_are_let_go_once_it_is_down():
    """A request that passed the outage check just before PostgreSQL went away waits in the
    pool, which cannot open a connection; once the outage is confirmed it gets the pool's
    error at once (a 503), not after the pool's 5 s timeout."""
    import threading
    import time

    from psycopg_pool import ConnectionPool, PoolTimeout

    from erp.embedded import free_port

    nobody = f"postgresql://erp@127.0.0.1:{free_port()}/erp?connect_timeout=2"
    pool = ConnectionPool(nobody, min_size=0, max_size=1, timeout=5, reconnect_timeout=2, open=True)
    waited: list[float] = []

    def request() -> None:
        started = time.monotonic()
        with pytest.raises(PoolTimeout):
            pool.getconn()
        waited.append(time.monotonic() - started)

    try:
        waiting = threading.Thread(target=request)
        waiting.start()
        deadline = time.monotonic() + 3
        while pool.get_stats().get("requests_waiting", 0) < 1:
            assert time.monotonic() < deadline, "the request never waited in the pool"
            time.sleep(0.01)
        db_outage._waiters_fail(pool)
        waiting.join(timeout=6)
    finally:
        pool.close()
    assert waited and waited[0] < 1.0
