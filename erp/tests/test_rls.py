"""Row-level security (erp/tenancy/rls.py): PostgreSQL hides other tenants' rows even from a
statement without a tenant condition, and the application's role cannot turn it off.

The suite connects as the application's role (erp/testing/fixtures.py: django_db_setup), so
every test here runs what the web and worker processes run."""

from __future__ import annotations

import contextlib
import itertools
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, connection, models, transaction

from erp.tenancy.models import TenantOwnedModel
from erp.tenancy.rls import EXEMPT_TABLES, POLICY
from erp.tenancy.scoping import all_tenants, tenant_scope
from erp.testing.factories import TenantFactory

TENANT_TABLES = sorted(
    m._meta.db_table
    for m in apps.get_models()
    if issubclass(m, TenantOwnedModel) and m._meta.db_table not in EXEMPT_TABLES
)
MODELS: dict[str, Any] = {m._meta.db_table: m for m in apps.get_models()}
_serial = itertools.count(1)


def _value(field: models.Field, tenant: Any) -> Any:
    """A valid value for a required field (rows for the proof, not realistic data)."""
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, models.ForeignKey):
        if field.name == "tenant":
            return tenant
        return _row(field.related_model, tenant)
    if isinstance(field, models.BinaryField):
        return b"x"
    if isinstance(field, models.JSONField):
        return {}
    if isinstance(field, (models.DecimalField,)):
        return Decimal("0")
    if isinstance(field, (models.IntegerField, models.FloatField)):
        return next(_serial)
    if isinstance(field, models.BooleanField):
        return False
    if isinstance(field, models.DateTimeField):
        from django.utils import timezone

        return timezone.now()
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, (models.EmailField,)):
        return f"r{next(_serial)}@example.com"
    return f"r{next(_serial)}"[: field.max_length or 50]


def _row(model: Any, tenant: Any) -> Any:
    """One saved row of `model` for `tenant`, its required parents made for the same tenant."""
    values = {}
    for field in model._meta.concrete_fields:
        free_text = isinstance(field, models.CharField) and not field.choices
        if field.primary_key or field.null or (field.has_default() and not free_text):
            continue
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            continue
        values[field.name] = _value(field, tenant)
    with all_tenants():
        return model.objects.create(**values)


def _tenant_ids(table: str, where: str = "") -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT tenant_id FROM "{table}" {where} ORDER BY tenant_id')
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db
def test_every_tenant_owned_table_has_row_level_security_forced_with_the_policy():
    # A new tenant-owned model whose migration lacks EnableRowLevelSecurity(...) fails here.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "  (SELECT count(*) FROM pg_policies p WHERE p.tablename = c.relname"
            "   AND p.policyname = %s AND p.cmd = 'ALL' AND p.qual LIKE '%%app.tenant_ids%%'"
            "   AND p.with_check = p.qual), "
            "  (SELECT count(*) FROM pg_policies p WHERE p.tablename = c.relname) "
            "FROM pg_class c WHERE c.relname = ANY(%s) AND c.relkind = 'r' ORDER BY c.relname",
            [POLICY, TENANT_TABLES],
        )
        found = {name: tuple(rest) for name, *rest in cursor.fetchall()}
    assert len(TENANT_TABLES) >= 16
    assert found == {table: (True, True, 1, 1) for table in TENANT_TABLES}


@pytest.mark.django_db
def test_every_table_with_a_tenant_id_is_tenant_owned_or_a_named_exemption():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND column_name = 'tenant_id' ORDER BY table_name"
        )
        tables = {row[0] for row in cursor.fetchall()}
    assert tables == set(TENANT_TABLES) | EXEMPT_TABLES


@pytest.mark.django_db
def test_the_app_connects_as_a_role_that_cannot_bypass_row_security(tenant_a):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )
        assert cursor.fetchone() == (settings.DATABASE_APP_ROLE, False, False)
        cursor.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() "
            "AND tableowner = current_user"
        )
        assert cursor.fetchone() == (0,)
    for statement in (
        'ALTER TABLE "ai_agents_message" DISABLE ROW LEVEL SECURITY',
        'ALTER TABLE "ai_agents_message" NO FORCE ROW LEVEL SECURITY',
        'DROP POLICY tenant_isolation ON "ai_agents_message"',
        f"ALTER ROLE {settings.DATABASE_APP_ROLE} BYPASSRLS",
        "SET ROLE postgres",
    ):
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement)
    with all_tenants(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class "
            "WHERE relname = 'ai_agents_message'"
        )
        assert cursor.fetchone() == (True, True)


@pytest.mark.django_db
@pytest.mark.parametrize("table", TENANT_TABLES)
def test_raw_sql_without_a_tenant_condition_sees_only_the_scoped_tenants_rows(
    table, tenant_a, tenant_b
):
    model = MODELS[table]
    _row(model, tenant_a)
    _row(model, tenant_b)
    other = TenantFactory.create(slug="other", name="Other")

    with tenant_scope(tenant_a):
        assert _tenant_ids(table) == [tenant_a.pk]
    with tenant_scope(tenant_b):
        assert _tenant_ids(table) == [tenant_b.pk]
    with tenant_scope(tenant_a, tenant_b):  # staff with two memberships
        assert _tenant_ids(table) == [tenant_a.pk, tenant_b.pk]
    with tenant_scope(other):
        assert _tenant_ids(table) == []
    assert _tenant_ids(table) == []  # no scope: nothing
    with all_tenants():  # the explicit bypass
        assert _tenant_ids(table) == [tenant_a.pk, tenant_b.pk]


@pytest.mark.django_db
@pytest.mark.parametrize("table", TENANT_TABLES)
def test_raw_writes_cannot_reach_or_create_another_tenants_rows(table, tenant_a, tenant_b):
    model = MODELS[table]
    theirs = _row(model, tenant_b)
    pk = model._meta.pk.column

    with tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute(f'UPDATE "{table}" SET tenant_id = tenant_id')
        assert cursor.rowcount == 0
        cursor.execute(f'DELETE FROM "{table}"')
        assert cursor.rowcount == 0
        # Moving my row to another tenant, or writing one for them, fails WITH CHECK.
        mine = _row(model, tenant_a)
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            cursor.execute(
                f'UPDATE "{table}" SET tenant_id = %s WHERE "{pk}" = %s',
                [tenant_b.pk, mine.pk],
            )
    with all_tenants():
        assert model.objects.unscoped().filter(pk=theirs.pk, tenant_id=tenant_b.pk).exists()
        assert model.objects.unscoped().filter(pk=mine.pk, tenant_id=tenant_a.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_each_statement_carries_the_scope_and_nothing_lingers(
    tenant_a, tenant_b
):
    # Autocommit: every statement is a transaction of its own; the scope travels with it and
    # ends with it, so the connection (pooled in production) holds nothing afterwards.
    model = MODELS["llm_usagelog"]
    _row(model, tenant_a)
    _row(model, tenant_b)
    assert connection.get_autocommit() and not connection.in_atomic_block

    with tenant_scope(tenant_a):
        assert _tenant_ids("llm_usagelog") == [tenant_a.pk]
        assert _tenant_ids("llm_usagelog") == [tenant_a.pk]
    assert _tenant_ids("llm_usagelog") == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('app.tenant_ids', true)")
        assert cursor.fetchone()[0] in (None, "")
    with tenant_scope(tenant_b):
        assert _tenant_ids("llm_usagelog") == [tenant_b.pk]


@pytest.mark.django_db
def test_inside_a_transaction_the_scope_follows_the_code_and_savepoint_rollbacks(
    tenant_a, tenant_b
):
    model = MODELS["llm_usagelog"]
    _row(model, tenant_a)
    _row(model, tenant_b)
    with transaction.atomic():
        with tenant_scope(tenant_a):
            assert _tenant_ids("llm_usagelog") == [tenant_a.pk]
        assert _tenant_ids("llm_usagelog") == []  # the scope ended inside the transaction
        with tenant_scope(tenant_b):
            try:
                with transaction.atomic():
                    with tenant_scope(tenant_a):
                        assert _tenant_ids("llm_usagelog") == [tenant_a.pk]
                    raise RuntimeError("undo")
            except RuntimeError:
                pass
            # The savepoint's rollback undid its setting: tenant B's scope is sent again.
            assert _tenant_ids("llm_usagelog") == [tenant_b.pk]


@pytest.mark.django_db
def test_querysets_scoped_by_argument_carry_their_scope_to_the_database(tenant_a, tenant_b):
    model = MODELS["llm_usagelog"]
    mine = _row(model, tenant_a)
    theirs = _row(model, tenant_b)

    # No ambient scope: .for_tenant() and the .unscoped() bypass still reach their rows.
    assert list(model.objects.for_tenant(tenant_a).values_list("pk", flat=True)) == [mine.pk]
    assert model.objects.unscoped().filter(pk__in=[mine.pk, theirs.pk]).count() == 2
    assert model.objects.for_tenant(tenant_b).filter(pk=theirs.pk).update(model="x") == 1
    assert model.objects.for_tenant(tenant_b).filter(pk=mine.pk).update(model="x") == 0
    assert model.objects.for_tenant(tenant_a).filter(pk=mine.pk).delete()[0] == 1
    assert model.objects.unscoped().filter(pk=mine.pk).count() == 0
    assert model.objects.unscoped().get(pk=theirs.pk).model == "x"


@pytest.mark.django_db
def test_a_row_saved_with_no_scope_acts_for_its_tenant_and_inside_a_scope_only_for_its_tenants(
    tenant_a, tenant_b
):
    model = MODELS["llm_usagelog"]
    theirs = _row(model, tenant_b)
    with all_tenants():
        loaded = model.objects.get(pk=theirs.pk)

    loaded.model = "saved without a scope"  # a webhook or task: the row's own tenant
    loaded.save(update_fields=["model"])
    with tenant_scope(tenant_a), pytest.raises(DatabaseError), transaction.atomic():
        loaded.model = "saved in tenant A's scope"  # a request of A: refused by the database
        loaded.save(update_fields=["model"])
    with all_tenants():
        assert model.objects.get(pk=theirs.pk).model == "saved without a scope"


@pytest.mark.django_db
def test_a_failed_statement_and_a_raw_rollback_to_savepoint_keep_the_scope(tenant_a, tenant_b):
    # The knowledge search's pattern: savepoint + statement in one round trip; when it fails
    # (statement timeout), a raw ROLLBACK TO SAVEPOINT, and the transaction goes on.
    model = MODELS["llm_usagelog"]
    _row(model, tenant_a)
    _row(model, tenant_b)
    with tenant_scope(tenant_a), transaction.atomic(), connection.cursor() as cursor:
        with pytest.raises(DatabaseError, match="division by zero"):
            cursor.execute("SAVEPOINT s; SELECT 1 / 0")
        cursor.execute("ROLLBACK TO SAVEPOINT s; RELEASE SAVEPOINT s")
        assert _tenant_ids("llm_usagelog") == [tenant_a.pk]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("atomic", [False, True])
def test_the_scope_holds_for_positional_named_and_no_parameters(atomic, tenant_a, tenant_b):
    # With positional parameters the scope's values travel as parameters (one query text for
    # every tenant); named or none: written in the text. Each statement sees its tenant only.
    model = MODELS["llm_usagelog"]
    _row(model, tenant_a)
    _row(model, tenant_b)
    statements: list[tuple[str, Any]] = [
        ("SELECT tenant_id FROM llm_usagelog WHERE %s = %s ORDER BY 1", [1, 1]),
        ("SELECT tenant_id FROM llm_usagelog WHERE %(one)s = 1 ORDER BY 1", {"one": 1}),
        ("SELECT tenant_id FROM llm_usagelog WHERE 100 % 7 = 2 ORDER BY 1", None),
    ]
    for tenant in (tenant_a, tenant_b, tenant_a):
        with tenant_scope(tenant), transaction.atomic() if atomic else contextlib.nullcontext():
            for sql, params in statements:
                with connection.cursor() as cursor:
                    cursor.execute(sql, params)
                    assert [row[0] for row in cursor.fetchall()] == [tenant.pk], sql
    with connection.cursor() as cursor:  # and nothing lingers on the connection
        cursor.execute("SELECT tenant_id FROM llm_usagelog WHERE %s = %s", [1, 1])
        assert cursor.fetchall() == []
