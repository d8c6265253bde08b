from __future__ import annotations

import logging

from celery import shared_task

from erp.logging import request_id_var

logger = logging.getLogger(__name__)


@shared_task(name="erp.echo_request_id", soft_time_limit=10, time_limit=20)
def echo_request_id() -> str:
    """Returns the request id the worker sees (used by the health of the task pipeline)."""
    logger.info("echo_request_id")
    return request_id_var.get()


@shared_task(name="erp.ping_database", soft_time_limit=10, time_limit=20)
def ping_database(tenant_id: int) -> str:
    """Loads a tenant in the worker: proves the worker reaches the same database."""
    from erp.tenancy.models import Tenant

    tenant = Tenant.objects.filter(pk=tenant_id).first()
    return tenant.slug if tenant else ""


@shared_task(name="erp.database_session", soft_time_limit=10, time_limit=20)
def database_session() -> list[str]:
    """The worker's PostgreSQL session (backend pid and start): tasks that report the same one
    ran on a connection the worker kept (its pool is not closed between tasks)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        )
        pid, started = cursor.fetchone()
    return [str(pid), started.isoformat()]
