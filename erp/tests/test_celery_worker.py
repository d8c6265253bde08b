"""A real Celery worker process, on the test database and broker, sees committed rows."""

import json

import pytest

from erp.logging import request_id_var
from erp.tasks import database_session, echo_request_id, ping_database
from erp.testing.celery_worker import worker_running
from erp.testing.factories import TenantFactory

pytestmark = pytest.mark.slow


def test_real_worker_reads_committed_row(celery_worker_process):
    tenant = TenantFactory.create(slug="from-worker")
    assert ping_database.delay(tenant.pk).get(timeout=20) == "from-worker"


def test_request_id_travels_into_the_task_and_its_logs(celery_worker_process):
    token = request_id_var.set("req-abc-123")
    try:
        result = echo_request_id.delay()
    finally:
        request_id_var.reset(token)
    assert result.get(timeout=20) == "req-abc-123"
    lines = [
        json.loads(line)
        for line in celery_worker_process.log_path.read_text().splitlines()
        if line.startswith("{")
    ]
    assert any(
        line.get("message") == "echo_request_id" and line.get("request_id") == "req-abc-123"
        for line in lines
    )


def test_a_prefork_child_keeps_its_database_session_between_tasks(transactional_db, tmp_path):
    """Celery's own fix-up closed a prefork child's connection pool before and after every
    task: every message answered opened new PostgreSQL sessions. Ours hands the connection
    back to the pool and keeps the pool."""
    prefork = ("-P", "prefork", "-c", "1")
    # The production pool at one connection: the child's one thread never needs two, and a
    # pool that grew (a second session, opened whenever it likes) cannot blur the count.
    with worker_running(tmp_path, pool=prefork, DB_POOL_MAX_SIZE="1"):
        sessions = {tuple(database_session.delay().get(timeout=20)) for _ in range(6)}
    assert len(sessions) == 1, sessions  # one session for the six tasks
