"""erp.tenancy.rows: the pipeline's hot-path statements stay tenant-scoped and load rows as
the ORM does."""

from decimal import Decimal

import pytest
from django.db import DatabaseError, transaction

from erp.llm.models import UsageLog
from erp.tenancy import rows
from erp.tenancy.scoping import tenant_scope

pytestmark = pytest.mark.django_db


def _log(tenant, model="m"):
    return UsageLog(
        tenant=tenant,
        operation="chat",
        provider="google",
        model=model,
        input_tokens=7,
        output_tokens=3,
        total_tokens=10,
        cost_usd=Decimal("0.000125"),
    )


def test_insert_then_select_loads_what_the_orm_loads(tenant_a):
    log = _log(tenant_a)
    rows.insert([log])

    (loaded,) = rows.select(UsageLog, tenant_id=tenant_a.pk, where="id = %s", params=[log.pk])
    orm = UsageLog.objects.for_tenant(tenant_a).get(pk=log.pk)
    for field in UsageLog._meta.concrete_fields:
        assert getattr(loaded, field.attname) == getattr(orm, field.attname), field.name
    assert loaded.cost_usd == Decimal("0.000125")
    assert loaded.created_at.tzinfo is not None
    assert not loaded._state.adding and not log._state.adding


def test_select_and_update_never_reach_another_tenants_rows(tenant_a, tenant_b):
    mine, theirs = _log(tenant_a, "a"), _log(tenant_b, "b")
    rows.insert([mine])
    rows.insert([theirs])

    everything = rows.select(UsageLog, tenant_id=tenant_a.pk, where="model IN ('a', 'b')")
    assert [log.model for log in everything] == ["a"]
    # Their primary key with my tenant: nothing found, nothing changed.
    assert rows.select(UsageLog, tenant_id=tenant_a.pk, where="id = %s", params=[theirs.pk]) == []
    changed = rows.update(
        UsageLog, tenant_id=tenant_a.pk, pk=theirs.pk, values={"model": "hijacked"}
    )
    assert changed == 0
    assert UsageLog.objects.for_tenant(tenant_b).get(pk=theirs.pk).model == "b"


def test_update_adds_and_guards(tenant_a):
    with tenant_scope(tenant_a):
        log = _log(tenant_a)
        rows.insert([log])

        assert rows.update(
            UsageLog,
            tenant_id=tenant_a.pk,
            pk=log.pk,
            values={"input_tokens": rows.Add(5), "model": "n"},
            where="model = %s",
            params=["m"],
        )
        # The guard no longer holds: nothing changes.
        assert not rows.update(
            UsageLog,
            tenant_id=tenant_a.pk,
            pk=log.pk,
            values={"input_tokens": rows.Add(100)},
            where="model = %s",
            params=["m"],
        )
        log.refresh_from_db()
        assert (log.input_tokens, log.model) == (12, "n")


def test_run_together_gives_one_outcome_per_statement_in_order(tenant_a):
    with tenant_scope(tenant_a):
        first, second = _log(tenant_a, "x"), _log(tenant_a, "y")
        outcomes = rows.run_together(
            [
                rows.insert_statement([first, second]),
                rows.update_statement(
                    UsageLog, tenant_id=tenant_a.pk, pk=second.pk, values={"success": False}
                ),
                rows.select_statement(UsageLog, tenant_id=tenant_a.pk, order_by="model"),
            ]
        )
        assert [o.rowcount for o in outcomes] == [2, 1, 2]
        assert outcomes[0].rows is None and outcomes[1].rows is None
        assert outcomes[2].rows is not None
        loaded = [rows.load(UsageLog, row) for row in outcomes[2].rows]
        assert [(log.model, log.success) for log in loaded] == [("x", True), ("y", False)]


def test_a_failing_statement_stops_the_rest_and_raises(tenant_a):
    with tenant_scope(tenant_a):
        log = _log(tenant_a)
        rows.insert([log])
        with pytest.raises(DatabaseError), transaction.atomic():
            rows.run_together(
                [
                    rows.insert_statement([log]),  # duplicate primary key
                    rows.update_statement(
                        UsageLog, tenant_id=tenant_a.pk, pk=log.pk, values={"model": "later"}
                    ),
                ]
            )
        log.refresh_from_db()
        assert log.model == "m"


def test_deferred_writes_travel_with_the_owners_statements(tenant_a):
    with tenant_scope(tenant_a):
        logs = UsageLog.objects.for_tenant(tenant_a)
        with transaction.atomic(), rows.deferred_writes():
            first = _log(tenant_a, "deferred")
            rows.write(rows.insert_statement([first]))
            assert not logs.filter(model="deferred").exists()  # not sent yet
            taken = rows.take_deferred()
            assert len(taken) == 1 and rows.take_deferred() == []
            rows.run_together(taken)
            assert logs.filter(model="deferred").exists()
            rows.write(rows.insert_statement([_log(tenant_a, "left over")]))
        # What the owner did not take is sent when the block ends.
        assert logs.filter(model="left over").exists()


def test_durable_deferred_writes_survive_the_failed_blocks_rollback(tenant_a, tenant_b):
    """A model call's usage row is durable: when the block fails after it, the row is written
    after the rollback; the other writes of the block are gone with it."""
    with tenant_scope(tenant_a, tenant_b):
        logs = UsageLog.objects.unscoped()
        with (
            pytest.raises(RuntimeError),
            rows.survive_rollback(),
            transaction.atomic(),
            rows.deferred_writes(),
        ):
            rows.write(rows.insert_statement([_log(tenant_a, "spent")]), durable=True)
            rows.write(rows.insert_statement([_log(tenant_b, "spent-b")]), durable=True)
            rows.write(rows.insert_statement([_log(tenant_a, "plain")]))
            taken = rows.take_deferred()  # sent with the block's own statements, rolled back too
            rows.run_together(taken[:1])
            rows.write(rows.insert_statement([_log(tenant_a, "late")]), durable=True)
            raise RuntimeError("boom")
        assert set(logs.values_list("model", flat=True)) == {"late"}

        # Nothing is written twice when the block succeeds.
        with rows.survive_rollback(), transaction.atomic(), rows.deferred_writes():
            rows.write(rows.insert_statement([_log(tenant_a, "once")]), durable=True)
        assert logs.filter(model="once").count() == 1
        assert UsageLog.objects.for_tenant(tenant_b).count() == 0


def test_deferred_writes_are_dropped_with_an_error_and_not_deferred_outside_one(tenant_a):
    with tenant_scope(tenant_a):
        logs = UsageLog.objects.for_tenant(tenant_a)
        with pytest.raises(RuntimeError), transaction.atomic(), rows.deferred_writes():
            rows.write(rows.insert_statement([_log(tenant_a, "lost")]))
            raise RuntimeError("boom")
        assert not logs.filter(model="lost").exists()

        rows.write(rows.insert_statement([_log(tenant_a, "now")]))  # no block: sent at once
        assert logs.filter(model="now").exists()


def test_a_durable_write_survives_in_the_scope_it_was_written_in(tenant_a, tenant_b):
    # The gateway writes a usage row in its tenant's scope; after the rollback the row is
    # sent again in that scope (row-level security), not in whatever scope is left around.
    with (
        pytest.raises(RuntimeError),
        tenant_scope(tenant_b),
        rows.survive_rollback(),
        transaction.atomic(),
        rows.deferred_writes(),
    ):
        with tenant_scope(tenant_a):
            rows.write(rows.insert_statement([_log(tenant_a, "spent")]), durable=True)
        raise RuntimeError("boom")
    assert list(UsageLog.objects.for_tenant(tenant_a).values_list("model", flat=True)) == ["spent"]
    assert UsageLog.objects.for_tenant(tenant_b).count() == 0
