"""Django's PostgreSQL compilers; a queryset scoped by argument (`.for_tenant(t)`, or the
explicit bypass `.unscoped()`) runs its statement with that scope (erp/tenancy/scoping.py)."""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import compiler as postgresql

from erp.tenancy.scoping import reset_scope, set_scope


class _QueryScope:
    query: Any

    def execute_sql(self, *args: Any, **kwargs: Any) -> Any:
        scope = getattr(self.query, "rls_scope", None)
        if scope is None:
            return super().execute_sql(*args, **kwargs)  # type: ignore[misc]  # a mixin: the compiler comes after it
        token = set_scope(scope)
        try:
            return super().execute_sql(*args, **kwargs)  # type: ignore[misc]  # a mixin: the compiler comes after it
        finally:
            reset_scope(token)


class SQLCompiler(_QueryScope, postgresql.SQLCompiler):
    pass


class SQLInsertCompiler(_QueryScope, postgresql.SQLInsertCompiler):
    pass


class SQLDeleteCompiler(_QueryScope, postgresql.SQLDeleteCompiler):
    pass


class SQLUpdateCompiler(_QueryScope, postgresql.SQLUpdateCompiler):
    pass


class SQLAggregateCompiler(_QueryScope, postgresql.SQLAggregateCompiler):
    pass
