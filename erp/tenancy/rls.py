"""Row-level security: PostgreSQL itself keeps each tenant's rows apart (defence in depth).

Every tenant-owned table (`TenantOwnedModel`, except the tenancy tables that decide the scope:
memberships and API keys are read before any tenant is known) has RLS enabled and FORCEd, and
one policy, `tenant_isolation`: a row is visible and writable when its `tenant_id` is in the
transaction's setting `app.tenant_ids` (an array literal, '{1,2}': staff with two memberships),
or when `app.all_tenants` is 'on' (the explicit bypass: `all_tenants()`, `.unscoped()`). With
neither set a table looks empty and refuses writes: it fails closed, like the managers.

The application connects as a role that is neither superuser nor BYPASSRLS and owns nothing
(`DATABASE_APP_ROLE`, created by the migration `erp/0002_row_level_security` if missing);
migrations run as the owner. The settings are transaction-local (`set_config(..., true)`),
sent by the database backend (`erp.tenancy.postgres`) in front of the first statement of each
transaction from the scope in `erp.tenancy.scoping`, so a pooled connection never carries a
tenant from one request to the next.

The policy's settings sit in scalar subqueries: PostgreSQL evaluates them once per statement
(an InitPlan) instead of parsing the array for every row (the outer cast keeps `ANY` from
reading the subquery as a set of arrays).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from django.db import migrations

if TYPE_CHECKING:
    from erp.tenancy.scoping import Scope

POLICY = "tenant_isolation"
TENANTS_SETTING = "app.tenant_ids"
ALL_SETTING = "app.all_tenants"

# Tenant-owned by inheritance but read to find the scope itself (authentication, the staff
# middleware), before any tenant is known.
EXEMPT_TABLES = frozenset({"tenancy_membership", "tenancy_apikey"})

_VISIBLE = (
    f"((SELECT current_setting('{ALL_SETTING}', true) = 'on') "
    f"OR tenant_id = ANY ((SELECT NULLIF(current_setting('{TENANTS_SETTING}', true), '')"
    f"::bigint[])::bigint[]))"
)


def scope_value(scope: Scope | None) -> str:
    """The settings' values for a scope, as one key ('' = nothing in scope)."""
    from erp.tenancy.scoping import ALL_TENANTS

    if scope is None:
        return ""
    if scope is ALL_TENANTS:
        return "*"
    assert isinstance(scope, frozenset)
    return "{" + ",".join(str(int(tenant_id)) for tenant_id in sorted(scope)) + "}"


# `set_config_sql` with the values as parameters: the same text for every tenant, so psycopg's
# cache of converted queries (keyed on the text) serves all of them.
SET_CONFIG_BOUND = (
    f"SELECT set_config('{TENANTS_SETTING}', %s, true), set_config('{ALL_SETTING}', %s, true)"
)


def set_config_params(value: str) -> list[str]:
    """The two settings' values for `scope_value(...)`: SET_CONFIG_BOUND's parameters."""
    return ["", "on"] if value == "*" else [value, ""]


def set_config_sql(value: str) -> str:
    """One statement setting both transaction-local values for `scope_value(...)`. Literal
    SQL (ints and fixed words only): it is sent in front of statements of either paramstyle."""
    tenants, everything = set_config_params(value)
    return (
        f"SELECT set_config('{TENANTS_SETTING}', '{tenants}', true), "
        f"set_config('{ALL_SETTING}', '{everything}', true)"
    )


def enable_sql(table: str) -> str:
    return (
        f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY;\n'
        f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY;\n'
        f'DROP POLICY IF EXISTS {POLICY} ON "{table}";\n'
        f'CREATE POLICY {POLICY} ON "{table}" USING {_VISIBLE} WITH CHECK {_VISIBLE}'
    )


def disable_sql(table: str) -> str:
    return (
        f'DROP POLICY IF EXISTS {POLICY} ON "{table}";\n'
        f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY;\n'
        f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY'
    )


def EnableRowLevelSecurity(*tables: str) -> Any:
    """The migration operation a new tenant-owned table needs (erp/tests/test_rls.py fails
    until it has it)."""
    return migrations.RunSQL(
        [enable_sql(table) for table in tables],
        reverse_sql=[disable_sql(table) for table in tables],
    )


ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def app_role_ensure(cursor: Any, role: str, *, password: str = "") -> None:
    """Creates the application's role if missing and gives it the data rights (never DDL) on
    today's and tomorrow's tables of the schema (default privileges of the owner running the
    migrations). Refuses a role that is superuser, BYPASSRLS or the owner itself."""
    if not ROLE_NAME.match(role):
        raise ValueError(f"DATABASE_APP_ROLE must match {ROLE_NAME.pattern}, got {role!r}")
    cursor.execute("SELECT current_user")
    if cursor.fetchone()[0] == role:
        raise ValueError(
            f"DATABASE_APP_ROLE ({role}) is the role running the migrations: the application "
            "must connect as another role, which owns nothing"
        )
    cursor.execute("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = %s", [role])
    found = cursor.fetchone()
    if found is None:
        cursor.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS")
    elif found[0]:
        raise ValueError(f"role {role} is superuser or BYPASSRLS: row-level security needs neither")
    if password:
        cursor.execute(f"ALTER ROLE {role} PASSWORD %s", [password])
    cursor.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
    cursor.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    cursor.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA public "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}"
    )
    cursor.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA public "
        f"GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {role}"
    )
