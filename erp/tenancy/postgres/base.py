"""Django's PostgreSQL backend; every transaction carries the tenant scope of its code.

Row-level security (erp/tenancy/rls.py) reads the scope from transaction-local settings. This
backend sends them: in front of the first statement of a transaction whose scope differs from
what the transaction already holds, as one more statement in the same round trip (client-side
binding sends `SELECT set_config(...); <statement>` as one simple query; the cursor then moves
past the first result). No round trip is added, and nothing is set at session level, so a
pooled connection never carries a tenant into the next transaction.

A transaction's BEGIN travels the same way: the driver stays in autocommit (psycopg would send
BEGIN in a round trip of its own before the first statement), and the first statement of a
transaction goes as `BEGIN; [SELECT set_config(...);] <statement>`. COMMIT and ROLLBACK are
psycopg's, sent when the server says a transaction is open; a transaction that sent nothing
costs no round trip at all.

- In autocommit (outside `atomic`) each statement is its own transaction: it gets the prefix
  whenever a scope is set (the simple query's statements share one implicit transaction).
- Inside a transaction the value is sent once, and again when the scope changes; a rollback
  to a savepoint (Django's, or a raw one sent while the transaction is in error) or a failed
  statement makes it unknown (sent again).
- The prefix takes the values as parameters when the statement has positional ones
  (`SET_CONFIG_BOUND`): one query text for every tenant, which psycopg's cache of converted
  queries keys on; otherwise (no or named parameters) they are written in it.
- `executemany` cannot carry a second statement: the setting goes alone before it.
- Server-side cursors (a DECLARE cannot carry it either) are off: `DISABLE_SERVER_SIDE_CURSORS`.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import transaction
from django.db.backends.postgresql import base, operations
from psycopg import _queries
from psycopg.pq import TransactionStatus

from erp.tenancy.rls import SET_CONFIG_BOUND, scope_value, set_config_params, set_config_sql
from erp.tenancy.scoping import current_scope

_UNKNOWN = "?"  # after a savepoint rollback or an error: whatever it is, send it again

# psycopg keeps the conversion of a query's placeholders (client-side binding) in an LRU cache
# of 128 queries, but admits only queries up to 4096 characters and 50 parameters. The
# engine's round trips (several statements in one query, erp.tenancy.rows.run_together) are
# longer: converting one again costs ~0.25 ms of CPU per message (bench/pipeline.py). The
# cache's size stays; these limits only say what may enter it.
_queries.MAX_CACHED_STATEMENT_LENGTH = max(_queries.MAX_CACHED_STATEMENT_LENGTH, 16384)
_queries.MAX_CACHED_STATEMENT_PARAMS = max(_queries.MAX_CACHED_STATEMENT_PARAMS, 200)


class DatabaseOperations(operations.DatabaseOperations):
    compiler_module = "erp.tenancy.postgres.compiler"


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = True
        # The scope value the open transaction holds ('' = none); only read inside a
        # transaction the server says is open (one that sent nothing holds nothing).
        self.rls_value = ""
        # First, so outermost: wrappers added later (query counters) see a statement with its
        # prefix (BEGIN, the scope's setting) when it carries one.
        self.execute_wrappers.append(self._with_scope)

    def _with_scope(
        self, execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        # Five positional parameters: Django calls execute wrappers so (erp/codesize.py ALLOWED).
        wanted = scope_value(current_scope())
        if not self.in_atomic_block and self.get_autocommit():
            if not wanted:
                return execute(sql, params, many, context)
            if many:
                with transaction.atomic(using=self.alias):
                    return self._with_scope(execute, sql, params, many, context)
            return self._prefixed(execute, sql=sql, params=params, context=context, wanted=wanted)
        if self.connection.info.transaction_status == TransactionStatus.INERROR:
            # Only a rollback runs now (a raw ROLLBACK TO SAVEPOINT too): it may take the value
            # back to the savepoint's, so it is unknown afterwards.
            try:
                return execute(sql, params, many, context)
            finally:
                self.rls_value = _UNKNOWN
        # Nothing sent yet in this transaction: its BEGIN travels with the statement, and
        # the transaction holds no scope yet (whatever an earlier one held).
        begin = self.connection.info.transaction_status == TransactionStatus.IDLE
        held = "" if begin else self.rls_value
        if wanted == held and not begin:
            return execute(sql, params, many, context)
        scope = wanted if wanted != held else None
        self.rls_value = _UNKNOWN
        if many:
            with self.wrap_database_errors, self.connection.cursor() as cursor:
                cursor.execute(";\n".join(_heads(self.connection, begin=begin, scope=scope)))
            result = execute(sql, params, many, context)
        else:
            result = self._prefixed(
                execute, sql=sql, params=params, context=context, wanted=scope, begin=begin
            )
        self.rls_value = wanted
        return result

    def _prefixed(
        self,
        execute: Any,
        *,
        sql: str,
        params: Any,
        context: dict[str, Any],
        wanted: str | None,
        begin: bool = False,
    ) -> Any:
        """`sql` run after BEGIN (`begin`) and the scope's setting (`wanted`, None: none) in
        one simple query; the cursor moves past their results to the statement's."""
        heads = _heads(
            self.connection, begin=begin, scope=wanted, bound=isinstance(params, list | tuple)
        )
        if wanted is not None and isinstance(params, list | tuple):  # one text for every tenant
            params = [*set_config_params(wanted), *params]
        result = execute(";\n".join([*heads, sql]), params, False, context)
        for _head in heads:
            context["cursor"].cursor.nextset()
        return result

    def _set_autocommit(self, autocommit: bool) -> None:
        # The driver stays in autocommit whatever Django's state: a transaction's BEGIN is
        # sent by _with_scope with its first statement, not by psycopg in a round trip of
        # its own (COMMIT and ROLLBACK follow the server's transaction status either way).
        status = self.connection.info.transaction_status
        if status != TransactionStatus.IDLE:
            # What psycopg refused when Django switched its autocommit: the server still holds
            # a transaction Django believes ended (an exception between a block's end and its
            # COMMIT). Carrying on would let later statements join it, and lose them with it.
            with self.wrap_database_errors:
                raise psycopg.ProgrammingError(
                    f"can't change 'autocommit' now: connection in transaction status {status.name}"
                )
        if not self.connection.autocommit:
            super()._set_autocommit(True)  # type: ignore[misc]  # private: not in django-stubs

    def _savepoint_rollback(self, sid: str) -> None:
        # Plain: the transaction may be in error until it ran.
        super()._savepoint_rollback(sid)  # type: ignore[misc]  # private: not in django-stubs
        self.rls_value = _UNKNOWN


def _heads(connection: Any, *, begin: bool, scope: str | None, bound: bool = False) -> list[str]:
    """The statements sent in front of one: BEGIN (psycopg's own, with the connection's
    isolation level and access mode) when it opens the transaction, the scope's setting when it
    changes (with `bound`, taking its values as parameters: `SET_CONFIG_BOUND`)."""
    heads = [connection._get_tx_start_command().decode()] if begin else []
    if scope is not None:
        heads.append(SET_CONFIG_BOUND if bound else set_config_sql(scope))
    return heads
