"""The statements of `rows.run_together`, prepared once per connection and run by name.

Several statements travel in one simple query (client-side binding), which PostgreSQL parses,
analyses and plans again on every call: for the conversation engine's first round trip (nine
statements, their row-security policies, the same subqueries over and over) planning cost
more server CPU than running them (`EXPLAIN (ANALYZE)`, README). Here each statement is sent
as `PREPARE <name> AS <statement>` the first time a connection sees it, and as
`EXECUTE <name>(<values>)` ever after, still all in ONE round trip and one query string: the
same implicit transaction when there is none (all or nothing), the same statement order, the
backend's tenant scope in front, Django's cursor with its error translation and its execute
wrappers (query counters see one statement per round trip, its text the PREPAREs and
EXECUTEs). PostgreSQL plans a prepared statement for its first five runs with their values,
then keeps a generic plan when it is not worse (`plan_cache_mode`): what is saved is parsing
and analysing every time, and planning once it keeps one.

Why SQL-level PREPARE rather than psycopg's prepared statements: the project binds values on
the client (`Cursor` is a ClientCursor), and one simple query keeps the engine's several
statements in one round trip without psycopg's pipeline mode, which Django's cursor, the
scope prefix of `erp.tenancy.postgres` and the query counters know nothing about.

- The name is derived from the statement's text and its values' types (each parameter is
  declared with the type its literal had, see `_TYPES`), so the same text with a NULL where a
  uuid was is another prepared statement.
- PREPARE is not transactional: it holds after a rollback. The PREPAREs go first in the query
  string; when a round trip that carried any fails, which of them ran is not known, so the
  next one that would prepare on that connection reads `pg_prepared_statements` first.
- A connection prepares at most `MAX_PER_CONNECTION` statements (the engine has a few dozen
  texts); beyond, statements are sent as written.
- Nothing of ours sends `DISCARD ALL` or `DEALLOCATE`, and the pool does not reset
  connections; a transaction-pooling proxy (PgBouncer) in front would break SQL-level
  prepared statements (the application connects to PostgreSQL itself).
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import re
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from psycopg.types.json import Jsonb

# A connection prepares at most this many statements (server memory: a plan each).
MAX_PER_CONNECTION = 200
_PREFIX = "rows_"

# The SQL type of a value's literal as the client-side binding writes it (`1` is an integer,
# `55.0` a numeric, `'...'::uuid` a uuid), declared for the prepared statement's parameter;
# a string or a NULL is `unknown`: its place in the statement types it, as it typed the
# literal. So a prepared statement means what the statement written out meant.
_TYPES: dict[type, str] = {
    bool: "boolean",
    float: "numeric",
    decimal.Decimal: "numeric",
    uuid.UUID: "uuid",
    datetime.date: "date",
    datetime.timedelta: "interval",
    Jsonb: "jsonb",
    bytes: "bytea",
}
_INT4, _INT8 = 2**31, 2**63


def _sql_type(value: Any) -> str:
    kind = type(value)
    if kind is int:
        return (
            "integer"
            if -_INT4 < value < _INT4
            else "bigint"
            if -_INT8 < value < _INT8
            else "numeric"
        )
    if kind is datetime.datetime:
        return "timestamp with time zone" if value.tzinfo is not None else "timestamp"
    return _TYPES.get(kind, "unknown")


@dataclass
class _Connection:
    """What one connection (one server session) has prepared. `unsure`: a round trip that
    carried PREPAREs failed; the server's list is read before the next one."""

    names: set[str] = field(default_factory=set)
    unsure: bool = False


_connections: weakref.WeakKeyDictionary[Any, _Connection] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Named:
    name: str
    prepare: str  # PREPARE <name> (<types>) AS <statement with $n>
    execute: str  # EXECUTE <name>(%s, ...)


_PLACEHOLDER = re.compile(r"%%|%s")
_KEYED_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s")


@lru_cache(maxsize=512)
def _keys(sql: str) -> tuple[str, ...]:
    """The names of a statement's %(name)s placeholders, in order of first appearance."""
    return tuple(dict.fromkeys(m.group(1) for m in _KEYED_PLACEHOLDER.finditer(sql) if m.group(1)))


@lru_cache(maxsize=512)
def _named(sql: str, types: tuple[str, ...], keys: tuple[str, ...] = ()) -> _Named:
    """`keys`: the statement's placeholders are %(name)s, each name one parameter ($n of its
    place in `keys`) however often it appears; without, they are %s, one parameter each."""
    digest = hashlib.blake2b(f"{sql}\0{','.join(types)}".encode(), digest_size=12).hexdigest()
    name = _PREFIX + digest
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group() == "%%":
            return "%%"  # still a literal % for the client-side binding of the whole query
        count += 1
        return f"${count}"

    if keys:
        body = _KEYED_PLACEHOLDER.sub(
            lambda m: "%%" if m.group() == "%%" else f"${keys.index(m.group(1)) + 1}", sql
        )
        count = len(keys)
    else:
        body = _PLACEHOLDER.sub(number, sql)
    assert count == len(types), "a statement's %s placeholders and its values differ"
    declared = f" ({', '.join(types)})" if types else ""
    execute = f"EXECUTE {name}({', '.join(['%s'] * count)})" if count else f"EXECUTE {name}"
    return _Named(name=name, prepare=f"PREPARE {name}{declared} AS {body}\n", execute=execute)


@dataclass
class Batch:
    """One round trip's query and values, and what to record once it ran. `skip`: the
    results of its PREPAREs, before the statements' own."""

    sql: str
    params: list[Any]
    skip: int
    _state: _Connection
    _new: list[str]

    def ran(self) -> None:
        self._state.names.update(self._new)

    def failed(self) -> None:
        if self._new:
            self._state.unsure = True


def batch(
    connection: Any,
    statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any]]],
    cursor: Any,
) -> Batch:
    """The query running `statements` by name on `connection` (psycopg's), preparing those
    it has not prepared yet. `cursor`: Django's, to read the server's list when unsure.
    A statement's values are a list (%s placeholders) or a mapping (%(name)s placeholders,
    each name one parameter of the prepared statement)."""
    state = _connections.get(connection)
    if state is None:
        state = _connections[connection] = _Connection()
    keyed = [_keys(sql) if isinstance(params, Mapping) else () for sql, params in statements]
    values_of = [
        [params[key] for key in keys] if isinstance(params, Mapping) else params
        for (_sql, params), keys in zip(statements, keyed, strict=True)
    ]
    named = [
        _named(sql, tuple(_sql_type(p) for p in values), keys)
        for (sql, _params), values, keys in zip(statements, values_of, keyed, strict=True)
    ]
    missing = [n for n in named if n.name not in state.names]
    if missing and state.unsure:
        _reload(state, cursor)
        missing = [n for n in named if n.name not in state.names]
    room = MAX_PER_CONNECTION - len(state.names)
    new = list(dict.fromkeys(n.name for n in missing))[: max(room, 0)]
    by_name = {n.name: n for n in missing}
    prepares = [by_name[name].prepare for name in new]
    texts: list[str] = []
    sent_values: list[Any] = []
    for n, (sql, params), values in zip(named, statements, values_of, strict=True):
        if n.name in state.names or n.name in new:
            texts.append(n.execute)
            sent_values.extend(values)
        else:
            written, written_values = _written_out(sql, params)
            texts.append(written)
            sent_values.extend(written_values)
    return Batch(
        sql=";\n".join([*prepares, *texts]),
        params=sent_values,
        skip=len(prepares),
        _state=state,
        _new=new,
    )


def _written_out(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> tuple[str, list[Any]]:
    """The statement as sent when it is not run by name: with %s placeholders, one value per
    placeholder (a %(name)s one takes its value each time it appears)."""
    if not isinstance(params, Mapping):
        return sql, list(params)
    found = [m.group(1) for m in _KEYED_PLACEHOLDER.finditer(sql) if m.group(1)]
    return _KEYED_PLACEHOLDER.sub(lambda m: m.group() if m.group() == "%%" else "%s", sql), [
        params[key] for key in found
    ]


def _reload(state: _Connection, cursor: Any) -> None:
    cursor.execute("SELECT name FROM pg_prepared_statements WHERE starts_with(name, %s)", [_PREFIX])
    state.names = {row[0] for row in cursor.fetchall()}
    state.unsure = False
