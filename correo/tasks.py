"""Celery tasks (names starting with `bulk_` go to the bulk queue, see CELERY_TASK_ROUTES)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.contrib.auth import get_user_model

from correo.digest import digest_build
from correo.mailbox import MailboxError
from correo.models import ZohoConnection
from erp.llm.errors import LlmError

logger = logging.getLogger(__name__)

DIGEST_ALL = "correo.tasks.bulk_correo_digest_all"
DIGEST_USER = "correo.tasks.bulk_correo_digest_user"


def connected_members() -> list[tuple[int, int]]:
    """(user id, tenant id) of every member with a connected mailbox (maintenance query)."""
    connections = ZohoConnection.objects.unscoped().filter(owner__is_active=True).order_by("pk")
    # The refresh token is encrypted (not filterable in SQL): checked here.
    return [(c.owner_id, c.tenant_id) for c in connections if c.is_connected]


@shared_task(name=DIGEST_ALL, soft_time_limit=60, time_limit=90)
def bulk_correo_digest_all() -> int:
    """Daily (beat): one digest task per connected member. Returns how many were queued."""
    members = connected_members()
    for user_id, _tenant_id in members:
        bulk_correo_digest_user.delay(user_id)
    logger.info("correo.digest.fan_out", extra={"members": len(members)})
    return len(members)


# One member's digest: Zoho searches and reads, one model call (40 s per attempt, 2 attempts).
@shared_task(
    name=DIGEST_USER,
    bind=True,
    max_retries=2,
    default_retry_delay=600,
    soft_time_limit=300,
    time_limit=330,
)
def bulk_correo_digest_user(self, user_id: int) -> str:  # type: ignore[no-untyped-def]
    """The digest of one member; retried later when Zoho or the model is unavailable."""
    connection = ZohoConnection.objects.unscoped().select_related("owner", "tenant")
    conn = connection.filter(owner_id=user_id).first()
    if conn is None or not conn.is_connected:
        return "not_connected"
    user = get_user_model().objects.get(pk=user_id)
    try:
        digest = digest_build(user=user, tenant=conn.tenant)
    except MailboxError as exc:
        logger.warning("correo.digest.mailbox_failed", extra={"error": exc.code})
        if exc.code == "mailbox_unavailable":
            raise self.retry(exc=exc) from None
        return exc.code
    except LlmError as exc:
        logger.warning("correo.digest.llm_failed", extra={"error": exc.code})
        if exc.retryable:
            raise self.retry(exc=exc) from None
        return exc.code
    return digest.resumen
