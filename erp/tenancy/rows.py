"""Statements on tenant-owned tables for hot paths, without the ORM's per-query cost.

Building and compiling a queryset costs about 1.5 ms of CPU per statement (measured with
`bench/pipeline.py --profile`), more than PostgreSQL spends running it, and every round trip
to the server costs a few hundred microseconds more. The message pipeline runs about a dozen
statements per message, so it writes them with these helpers: the SQL of each model is built
once per process, rows are loaded with the model's own converters (`Model.from_db`, JSON
decoded as the ORM does), values are saved with the fields' `get_db_prep_save`, and several
statements can travel in one round trip (`run_together`, psycopg's client-side binding), each
prepared once per connection and run by name (`erp.tenancy.prepared`).

Tenant isolation stays structural: `select_statement` and `update_statement` take `tenant_id`
and always put it first in the WHERE clause; `insert_statement` takes instances that carry
their tenant. Row-level security checks it again: the statements run in the transaction's
tenant scope (`tenant_scope`, sent by erp/tenancy/postgres); the one-statement helpers
`select`, `update` and `insert` are scoped by their tenant argument, as `.for_tenant()` is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections
from django.db.models import Field, Model
from psycopg.pq import ExecStatus

from erp.tenancy import prepared
from erp.tenancy.scoping import Scope, current_scope, reset_scope, set_scope, tenant_scope

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=Model)
Statement = tuple[str, list[Any]]  # SQL with %s placeholders (a literal % written %%), params
KeyedStatement = tuple[str, Mapping[str, Any]]  # SQL with %(name)s placeholders, values by name


@dataclass(frozen=True)
class _Table:
    name: str
    columns: str  # quoted, comma-separated, in `attnames` order
    attnames: list[str]
    # (position, [(converter, column expression)]) of the fields the database returns raw
    converters: list[tuple[int, list[tuple[Callable[..., Any], Any]]]]
    fields: list[Any]
    casts: list[str]  # each column's type, for a literal written in a SELECT list


def _column(field: Field[Any, Any]) -> str:
    """A concrete field's column (the stubs allow None, for fields without one of their own)."""
    assert field.column is not None, field
    return field.column


@cache
def _table(model: type[Model]) -> _Table:
    quote = connection.ops.quote_name
    # Generated columns (a search vector) are the database's: never written, not read here.
    fields = [f for f in model._meta.concrete_fields if not getattr(f, "generated", False)]
    converters = []
    for position, field in enumerate(fields):
        col = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
        if found:
            converters.append((position, [(c, col) for c in found]))
    return _Table(
        name=quote(model._meta.db_table),
        columns=", ".join(quote(_column(f)) for f in fields),
        attnames=[f.attname for f in fields],
        converters=converters,
        fields=fields,
        casts=[str(f.cast_db_type(connection)) for f in fields],
    )


@dataclass(frozen=True)
class Outcome:
    """What one statement of `run_together` gave: its rows (None if it returns none) and the
    number of rows it touched."""

    rows: list[tuple[Any, ...]] | None
    rowcount: int


def run_together(statements: Sequence[Statement | KeyedStatement]) -> list[Outcome]:
    """The statements in ONE round trip, in order; one `Outcome` each. PostgreSQL runs them as
    separate commands (each with its own snapshot under READ COMMITTED); an error stops the
    rest and is raised. Each is prepared once per connection and run by name
    (`erp.tenancy.prepared`: parsed and planned once, not on every call)."""
    outcomes = []
    db = _db()
    with db.cursor() as cursor:
        sent = prepared.batch(db.connection, statements, cursor)
        try:
            cursor.execute(sent.sql, sent.params)
        except BaseException:
            sent.failed()
            raise
        sent.ran()
        result = cursor.cursor  # psycopg's: its status says whether rows came back, where
        # `description` would first build a Column for every column. Read straight from it
        # (Django's wrapper would wrap each call of the loop in the same error translation).
        with db.wrap_database_errors:
            for _ in range(sent.skip):  # the PREPAREs' results
                result.nextset()
            while True:
                pgresult = result.pgresult
                rows_back = pgresult is not None and pgresult.status == ExecStatus.TUPLES_OK
                outcomes.append(Outcome(result.fetchall() if rows_back else None, result.rowcount))
                if not result.nextset():
                    break
    return outcomes


def _db() -> Any:
    """This thread's default connection itself, not Django's `connection` proxy: every
    attribute read through the proxy looks the connection up again (asgiref's context-local
    storage, ~1 us), and preparing a row's values reads it a few times per field (54 -> 21 us
    for a usage row)."""
    return connections[DEFAULT_DB_ALIAS]


def load(model: type[M], row: Sequence[Any]) -> M:
    """An instance of `model` from a row of its `select_statement`."""
    table = _table(model)
    db = _db()
    values = list(row)
    for position, converters in table.converters:
        value = values[position]
        for converter, col in converters:
            value = converter(value, col, db)
        values[position] = value
    return model.from_db(db.alias, table.attnames, values)


def instances(model: type[M], outcome: Outcome) -> list[M]:
    """The rows of a `select_statement`'s outcome as instances."""
    return [load(model, row) for row in outcome.rows or []]


def first(model: type[M], outcome: Outcome) -> M | None:
    """The first row of a `select_statement`'s outcome as an instance, or None."""
    return load(model, outcome.rows[0]) if outcome.rows else None


def select_statement(
    model: type[Model],
    *,
    tenant_id: int,
    where: str = "",
    params: Sequence[Any] = (),
    order_by: str = "",
    limit: int | None = None,
) -> Statement:
    """SELECT of every column of `model` WHERE tenant_id = <tenant_id> AND (<where>)."""
    table = _table(model)
    sql = f"SELECT {table.columns} FROM {table.name} WHERE tenant_id = %s"  # noqa: S608
    if where:
        sql += f" AND ({where})"
    if order_by:
        sql += f" ORDER BY {order_by}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql, [tenant_id, *params]


def select(model: type[M], **options: Any) -> list[M]:
    """The instances `select_statement(model, **options)` finds."""
    with tenant_scope(options["tenant_id"]):
        (outcome,) = run_together([select_statement(model, **options)])
    return instances(model, outcome)


def insert_statement(objs: Sequence[Model]) -> Statement:
    """One INSERT of these new instances (one model); call `inserted(objs)` once it ran."""
    model = type(objs[0])
    table = _table(model)
    db = _db()
    row = "(" + ", ".join(["%s"] * len(table.fields)) + ")"
    params = [
        field.get_db_prep_save(field.pre_save(obj, True), db)
        for obj in objs
        for field in table.fields
    ]
    sql = f"INSERT INTO {table.name} ({table.columns}) VALUES " + ", ".join([row] * len(objs))  # noqa: S608
    return sql, params


def insert_new_statement(obj: Model, *, on_conflict: str = "") -> Statement:
    """One INSERT of a new instance whose primary key the database makes (an auto id), then
    `on_conflict` (say "ON CONFLICT (...) DO NOTHING"), RETURNING the key: set it on `obj`
    and call `inserted([obj])` when a row came back."""
    table, meta = _table(type(obj)), obj._meta
    db = _db()
    fields = [f for f in table.fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(_column(f)) for f in fields)
    params = [field.get_db_prep_save(field.pre_save(obj, True), db) for field in fields]
    marks = ", ".join(["%s"] * len(fields))
    pk = connection.ops.quote_name(_column(meta.pk))
    sql = f"INSERT INTO {table.name} ({columns}) VALUES ({marks}) {on_conflict} RETURNING {pk}"  # noqa: S608
    return sql, params


def insert_select_statement(
    obj: Model, *, prefix: Statement, columns: Mapping[str, str], from_sql: str
) -> Statement:
    """`<prefix> INSERT INTO <table> (...) SELECT <values> <from_sql>`: one new instance whose
    `columns` (attname -> SQL expression) come from the rows `from_sql` finds (a CTE of
    `prefix`, say); nothing is inserted when it finds none. The instance's own values are cast
    to their columns' types (a literal in a SELECT list has none). Call `inserted([obj])` once
    it ran and inserted."""
    table = _table(type(obj))
    db = _db()
    values, params = [], list(prefix[1])
    for field, cast in zip(table.fields, table.casts, strict=True):
        if field.attname in columns:
            values.append(columns[field.attname])
        else:
            values.append(f"%s::{cast}")
            params.append(field.get_db_prep_save(field.pre_save(obj, True), db))
    sql = (
        f"{prefix[0]} INSERT INTO {table.name} ({table.columns}) "
        f"SELECT {', '.join(values)} {from_sql}"
    )
    return sql, params


def inserted(objs: Sequence[Model]) -> None:
    alias = _db().alias
    for obj in objs:
        obj._state.adding = False
        obj._state.db = alias


def insert(objs: Sequence[Model]) -> None:
    """INSERT these new instances (one model) in one statement."""
    if objs:
        with tenant_scope(*{obj.tenant_id for obj in objs}):  # type: ignore[attr-defined]  # tenant-owned rows only
            run_together([insert_statement(objs)])
        inserted(objs)


@dataclass(frozen=True)
class Add:
    """`column = column + amount` in `update_statement`."""

    amount: int


@dataclass(frozen=True)
class Sql:
    """`column = <sql>` in `update_statement` (an expression of this module's callers, never
    input; its values in `params`)."""

    sql: str
    params: tuple[Any, ...] = ()


def update_statement(
    model: type[Model],
    *,
    tenant_id: int,
    pk: Any,
    values: Mapping[str, Any],
    where: str = "",
    params: Sequence[Any] = (),
) -> Statement:
    """UPDATE of one row of this tenant (`values`: field name -> value or `Add`), guarded by
    `where`; its rowcount is 0 when the row is gone or `where` no longer holds. An `Sql`
    value sees the row as it was before the UPDATE."""
    meta = model._meta
    db = _db()
    quote = db.ops.quote_name
    sets: list[str] = []
    set_params: list[Any] = []
    for name, value in values.items():
        field: Any = meta.get_field(name)
        column = quote(field.column)
        if isinstance(value, Add):
            sets.append(f"{column} = {column} + %s")
            set_params.append(value.amount)
        elif isinstance(value, Sql):
            sets.append(f"{column} = {value.sql}")
            set_params.extend(value.params)
        else:
            sets.append(f"{column} = %s")
            set_params.append(field.get_db_prep_save(value, db))
    assert meta.pk is not None  # every model has a primary key
    pk_column = quote(_column(meta.pk))
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} "  # noqa: S608
        f"WHERE tenant_id = %s AND {pk_column} = %s"
    )
    if where:
        sql += f" AND ({where})"
    return sql, [*set_params, tenant_id, pk, *params]


def update(model: type[Model], **options: Any) -> int:
    """Runs `update_statement(model, **options)`; the number of rows changed."""
    with tenant_scope(options["tenant_id"]):
        (outcome,) = run_together([update_statement(model, **options)])
    return outcome.rowcount


# --- deferred writes ------------------------------------------------------------------------


@dataclass
class _Pending:
    """The writes a `deferred_writes` block holds; `durable`: those of them that must outlive
    the block's failure (`write(durable=True)`)."""

    statements: list[Statement]
    durable: list[tuple[Statement, Scope | None]]  # with the scope it was written in
    anywhere: bool = False  # deferred outside a transaction too


_deferred: ContextVar[_Pending | None] = ContextVar("rows_deferred", default=None)
_survivors: ContextVar[list[tuple[Statement, Scope | None]] | None] = ContextVar(
    "rows_survivors", default=None
)


@contextmanager
def deferred_writes(*, anywhere: bool = False) -> Iterator[None]:
    """Inside a transaction: `write` keeps its statements for the block's owner to send with
    its own (`take_deferred`), saving a round trip each; whatever is left is sent when the
    block ends without an error. Nothing changes for other sessions: they could not see the
    rows before the transaction commits anyway. When the block fails, the durable ones still
    pending go to the enclosing `survive_rollback`. `anywhere`: outside a transaction too (the
    conversation engine's model phase holds none; its usage rows go with the reply)."""
    pending = _Pending(statements=[], durable=[], anywhere=anywhere)
    token = _deferred.set(pending)
    try:
        yield
    except BaseException:
        survivors = _survivors.get()
        if survivors is not None:
            survivors.extend(pending.durable)
        raise
    finally:
        _deferred.reset(token)
    if pending.statements:
        run_together(pending.statements)


@contextmanager
def survive_rollback() -> Iterator[None]:
    """Around a transaction block with `deferred_writes`: the durable writes it had not sent
    when it failed are sent after its rollback, each in its own autocommit statement (a model
    call's usage row: tokens spent are recorded whatever happened after)."""
    kept: list[tuple[Statement, Scope | None]] = []
    token = _survivors.set(kept)
    try:
        yield
    except BaseException:
        send_after_failure(kept)
        raise
    finally:
        _survivors.reset(token)


def send_after_failure(statements: Sequence[tuple[Statement, Scope | None]]) -> None:
    """Durable writes whose transaction failed, each in its own autocommit statement in the
    scope it was written in (a lost one is logged: the failure is the caller's to raise)."""
    for statement, scope in statements:
        scope_token = set_scope(scope)
        try:
            run_together([statement])
        except DatabaseError as exc:
            logger.warning("rows.durable_write_lost", extra={"error": type(exc).__name__})
        finally:
            reset_scope(scope_token)


def write(statement: Statement, *, durable: bool = False) -> None:
    """Runs a write now, or defers it inside `deferred_writes` (in a transaction). `durable`:
    sent even if the deferring block fails (see `survive_rollback`)."""
    pending = _deferred.get()
    if pending is not None and (pending.anywhere or connection.in_atomic_block):
        pending.statements.append(statement)
        if durable:
            pending.durable.append((statement, current_scope()))
    else:
        run_together([statement])


def take_deferred() -> list[Statement]:
    """The writes deferred so far (removed: the caller sends them, within the block's
    transaction, so they are no longer the block's to save after a failure)."""
    return [statement for statement, _durable in take_deferred_durable()]


def take_deferred_durable() -> list[tuple[Statement, tuple[Statement, Scope | None] | None]]:
    """`take_deferred`, each with its durable record (None: not durable), for a caller that
    sends the durable ones again when its transaction fails (`send_after_failure`)."""
    pending = _deferred.get()
    if pending is None or not pending.statements:
        return []
    durable = {id(statement): entry for entry in pending.durable for statement in [entry[0]]}
    taken = [(statement, durable.get(id(statement))) for statement in pending.statements]
    pending.statements.clear()
    pending.durable.clear()
    return taken
