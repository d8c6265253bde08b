"""Database connection helpers shared by the apps."""

from __future__ import annotations

from django.db import connection


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
