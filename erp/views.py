from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from erp.db_outage import database_up, is_outage_error, outage_suspected
from erp.embedded import redis_ping

logger = logging.getLogger(__name__)
HEALTHZ_DATABASE_SECONDS = 0.8


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database and the broker answer, 503 otherwise."""
    checks = {"database": _database_ok(), "broker": redis_ping(settings.REDIS_URL, timeout=1.0)}
    ok = all(checks.values())
    body = {"status": "ok" if ok else "unavailable", "checks": checks}
    return JsonResponse(body, status=200 if ok else 503)


def _database_ok() -> bool:
    """Within HEALTHZ_DATABASE_SECONDS: a load balancer must hear about an outage at once."""
    if not database_up():
        return False
    try:
        pool = connection.pool  # type: ignore[attr-defined]  # PostgreSQL backend only, unstubbed
        if pool is None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                return cursor.fetchone() == (1,)
        pool.open()
        with pool.connection(timeout=HEALTHZ_DATABASE_SECONDS) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except Exception as exc:
        if is_outage_error(exc):
            outage_suspected()
        logger.warning("healthz_database_failed", exc_info=True)
        return False
