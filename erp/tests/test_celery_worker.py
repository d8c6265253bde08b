"""A real Celery worker process, on the test database and broker, sees committed rows."""

import json

import pytest

from erp.logging import request_id_var
from erp.tasks import echo_request_id, ping_database
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
