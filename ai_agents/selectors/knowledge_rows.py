"""The search statement's session settings and its one-round-trip execution (split from
`ai_agents.selectors.knowledge`, which re-exports them)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from psycopg.pq import ExecStatus

CANDIDATES = 40  # per list, before fusion


def _session_settings(timeout_ms: int | None) -> str:
    """SET LOCAL statements for one search (sent as one round trip). Relaxed iterative scan
    (pgvector >= 0.8): when the tenant's filter drops most of the `ef_search` candidates, the
    scan goes on instead of returning too few rows; the vector CTE ranks its rows again.
    No sequential scan: every list reads through an index (the approximate vector list has
    only the HNSW index left, `_vector_cte`). No parallel workers: a Gather above the vector
    branch that its one-time filter skips still starts them (measured: 50 ms for nothing at
    100,000 chunks, far more on a loaded machine)."""
    ef = max(CANDIDATES, int(settings.KB_HNSW_EF_SEARCH))
    sql = (
        f"SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = relaxed_order; "
        "SET LOCAL enable_seqscan = off; SET LOCAL max_parallel_workers_per_gather = 0"
    )
    if timeout_ms is not None:
        sql = f"SET LOCAL statement_timeout = {int(timeout_ms)}; " + sql
    return sql


SAVEPOINT = "kb_search"


def _search_rows(sql: str, params: dict[str, Any], timeout_ms: int | None) -> list[Any]:
    """The search statement's rows in ONE round trip. Outside a transaction the settings and
    the search share a multi-statement query's implicit transaction. Inside one: savepoint,
    settings, search, ROLLBACK TO the savepoint (undoing SET LOCAL) and RELEASE; a failed
    search (timeout) skips the rest, the savepoint is rolled back apart, the caller goes on."""
    if not connection.in_atomic_block and connection.get_autocommit():
        with connection.cursor() as cursor:
            cursor.execute(f"{_session_settings(timeout_ms)};\n{sql}", params)
            return _last_rows(cursor)
    statements = (
        f"SAVEPOINT {SAVEPOINT}; {_session_settings(timeout_ms)};\n{sql};\n"
        f"ROLLBACK TO SAVEPOINT {SAVEPOINT}; RELEASE SAVEPOINT {SAVEPOINT}"
    )
    with connection.cursor() as cursor:
        try:
            cursor.execute(statements, params)
        except BaseException:
            cursor.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}; RELEASE SAVEPOINT {SAVEPOINT}")
            raise
        return _last_rows(cursor)


def _last_rows(cursor: Any) -> list[Any]:
    """The rows of the first result that has some (the SAVEPOINT and SET results come first),
    read from psycopg's cursor: its status says so without building `description`'s columns,
    and Django's wrapper would translate the errors of each call apart."""
    result = cursor.cursor
    with connection.wrap_database_errors:
        while result.pgresult is None or result.pgresult.status != ExecStatus.TUPLES_OK:
            if not result.nextset():
                return []
        return result.fetchall()
