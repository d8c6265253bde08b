"""The search statement's session settings and its one-round-trip execution (split from
`ai_agents.selectors.knowledge`, which re-exports them)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from psycopg.pq import ExecStatus

from erp.tenancy import prepared

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
_RELEASE = f"ROLLBACK TO SAVEPOINT {SAVEPOINT}; RELEASE SAVEPOINT {SAVEPOINT}"


def _search_rows(sql: str, params: dict[str, Any], timeout_ms: int | None) -> list[Any]:
    """The search statement's rows in ONE round trip. Outside a transaction the settings and
    the search share a multi-statement query's implicit transaction. Inside one: savepoint,
    settings, search, ROLLBACK TO the savepoint (undoing SET LOCAL) and RELEASE; a failed
    search (timeout) skips the rest, the savepoint is rolled back apart, the caller goes on.
    The search is prepared once per connection and run by name (`erp.tenancy.prepared`):
    planning it cost PostgreSQL more than running it (0.8 against 0.15 ms per message,
    `bench/pipeline.py` with pg_stat_statements). Its plan does not depend on the values:
    `_vector_cte` leaves one plan to each branch and the chunk count picks the branch when
    it runs, so PostgreSQL's generic plan is the plan."""
    with connection.cursor() as cursor:
        sent = prepared.batch(connection.connection, [(sql, params)], cursor)
        search = f"{_session_settings(timeout_ms)};\n{sent.sql}"
        in_transaction = connection.in_atomic_block or not connection.get_autocommit()
        if in_transaction:
            search = f"SAVEPOINT {SAVEPOINT}; {search};\n{_RELEASE}"
        try:
            cursor.execute(search, sent.params)
        except BaseException:
            sent.failed()
            if in_transaction:
                cursor.execute(_RELEASE)
            raise
        sent.ran()
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
