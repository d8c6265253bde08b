"""Database connection helpers shared by the apps."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import OperationalError, connection
from django.db.models import Model

from erp.retry import Backoff, call_with_retries


def connection_release() -> None:
    """Gives this thread's database connection back to the pool (`DB_POOL_MAX_SIZE`) before a
    long wait on something else, such as a model call: a checked-out connection that waits
    serves nobody, and with one per in-flight model call the pool (and PostgreSQL's
    max_connections) would run out long before the CPU does. The next query checks one out
    again.

    Inside an atomic block it does nothing: closing would end the caller's transaction (a
    test's `django_db` wrapper, or a caller that chose to hold one)."""
    if connection.in_atomic_block:
        return
    connection.close()


# After `connection_release` the next statement checks a connection out again, which can time
# out when the pool is drained: what must not be lost (a send's outcome, after the send left)
# is written with a few more tries.
WRITE_BACKOFF = Backoff(attempts=4, base_delay_s=0.5, max_delay_s=4.0)


def save_retried(instance: Model, fields: Sequence[str]) -> None:
    """`instance.save(update_fields=fields)`, retried on a database error of the connection
    (a pool timeout, a connection the server closed: closed here, not tried again)."""

    def save() -> None:
        try:
            instance.save(update_fields=fields)
        except OperationalError:
            connection.close_if_unusable_or_obsolete()
            raise

    call_with_retries(
        save, backoff=WRITE_BACKOFF, retryable=lambda error: isinstance(error, OperationalError)
    )
