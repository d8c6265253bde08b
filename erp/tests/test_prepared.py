"""erp.tenancy.prepared: `rows.run_together`'s statements are prepared once per connection and
then run by name, with the results, errors and all-or-nothing of the statements written out."""

import datetime
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from psycopg.types.json import Jsonb

from erp.llm.models import UsageLog
from erp.tenancy import prepared, rows
from erp.tenancy.scoping import tenant_scope

pytestmark = pytest.mark.django_db


def _server_statements() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, statement FROM pg_prepared_statements")
        return dict(cursor.fetchall())


def _unique(sql: str) -> str:
    """`sql` with a comment no other test's statement has: new to the connection."""
    return f"{sql} /* {uuid.uuid4().hex} */"


def test_a_statement_is_prepared_once_and_then_run_by_name():
    sql = _unique("SELECT %s::int + 1")
    assert rows.run_together([(sql, [1])])[0].rows == [(2,)]
    after_first = _server_statements()
    assert rows.run_together([(sql, [41])])[0].rows == [(42,)]

    ours = {name: text for name, text in after_first.items() if sql.split("/*")[1] in text}
    assert len(ours) == 1  # prepared the first time, with its placeholders numbered
    assert "SELECT $1::int + 1" in next(iter(ours.values()))
    assert _server_statements() == after_first  # the second run prepared nothing


def test_values_come_back_as_from_the_statement_written_out():
    when = datetime.datetime(2026, 12, 3, 1, 2, 3, tzinfo=datetime.UTC)
    values: list[Any] = [
        7,
        2**40,
        Decimal("0.000125"),
        1.5,
        True,
        uuid.uuid4(),
        when,
        "texto",
        None,
    ]
    values.append(Jsonb({"a": 1}))
    sql = _unique("SELECT " + ", ".join(["%s"] * len(values)))
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        written_out = cursor.fetchall()
    assert written_out[0][0] == 7 and written_out[0][7] == "texto"
    for _ in range(2):  # prepared, then by name
        got = rows.run_together([(sql, values)])[0].rows
        assert got is not None
        assert got == written_out
        assert [type(v) for v in got[0]] == [type(v) for v in written_out[0]]


def test_a_failure_after_a_prepare_leaves_the_next_round_trip_working(tenant_a):
    log = UsageLog(
        tenant=tenant_a,
        operation="chat",
        provider="google",
        model="m",
        input_tokens=1,
        output_tokens=1,
        total_tokens=2,
        cost_usd=Decimal("0"),
    )
    rows.insert([log])
    touch = _unique("UPDATE llm_usagelog SET model = %s WHERE tenant_id = %s AND id = %s")
    with tenant_scope(tenant_a):
        # The new UPDATE is prepared in front of the round trip; the duplicate INSERT fails
        # after it: nothing is written, and which PREPAREs ran is not known.
        with pytest.raises(IntegrityError), transaction.atomic():
            rows.run_together(
                [(touch, ["changed", tenant_a.pk, log.pk]), rows.insert_statement([log])]
            )
        log.refresh_from_db()
        assert log.model == "m"
        (outcome,) = rows.run_together([(touch, ["later", tenant_a.pk, log.pk])])
    assert outcome.rowcount == 1
    log.refresh_from_db()
    assert log.model == "later"


def test_a_connection_prepares_no_more_than_its_share(monkeypatch):
    state = prepared._connections[connection.connection]
    monkeypatch.setattr(prepared, "MAX_PER_CONNECTION", len(state.names))
    sql = _unique("SELECT %s::text || 'x'")
    before = _server_statements()
    assert rows.run_together([(sql, ["a"])])[0].rows == [("ax",)]
    assert _server_statements() == before  # sent as written


def test_named_placeholders_are_one_parameter_each_however_often_they_appear(monkeypatch):
    """The knowledge search's statement: %(name)s placeholders, some repeated."""
    sql = _unique("SELECT %(a)s::int + %(b)s::int * %(a)s::int, %(b)s::int, '100%%'")
    values = {"a": 2, "b": 10}
    assert rows.run_together([(sql, values)])[0].rows == [(22, 10, "100%")]
    ours = [t for t in _server_statements().values() if sql.split("/*")[1] in t]
    assert len(ours) == 1 and "SELECT $1::int + $2::int * $1::int, $2::int, '100%'" in ours[0]
    assert rows.run_together([(sql, {"a": 3, "b": 1})])[0].rows == [(6, 1, "100%")]

    # Written out when the connection has prepared its share: the same result.
    state = prepared._connections[connection.connection]
    monkeypatch.setattr(prepared, "MAX_PER_CONNECTION", len(state.names))
    other = _unique("SELECT %(a)s::int - %(b)s::int + %(a)s::int")
    before = _server_statements()
    assert rows.run_together([(other, values)])[0].rows == [(-6,)]
    assert _server_statements() == before


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_round_trip_is_still_all_or_nothing(tenant_a):
    with tenant_scope(tenant_a):
        log = UsageLog(
            tenant=tenant_a,
            operation="chat",
            provider="google",
            model="m",
            input_tokens=1,
            output_tokens=1,
            total_tokens=2,
            cost_usd=Decimal("0"),
        )
        rows.insert([log])
        for _ in range(2):  # preparing, then by name
            with pytest.raises(DatabaseError):
                rows.run_together(
                    [
                        rows.update_statement(
                            UsageLog, tenant_id=tenant_a.pk, pk=log.pk, values={"model": "x"}
                        ),
                        rows.insert_statement([log]),  # duplicate primary key
                    ]
                )
            log.refresh_from_db()
            assert log.model == "m"
