"""A conversation's running cost, added by the very statement that writes its usage row.

The statistics read a conversation's cost from the conversation (`Conversation.cost_usd`)
instead of summing the ledger at query time. The usage row and the addition go in ONE
statement (a data-modifying CTE): no extra round trip, and the sum on the conversation can
never drift from the ledger (both commit or neither does; a channel charge inserted twice adds
once, since the duplicate insert returns no row).

`erp` never imports the apps (`python -m erp.boundaries`), so it cannot name their model: the
app that owns conversations registers its table and column once, in its AppConfig.ready()
(`conversation_cost_register`), as apps do with `erp.demo.DEMO_LOADERS`. Without a
registration (an `erp`-only install) the usage row is written alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class _Target:
    table: str
    column: str


_target: list[_Target] = []


def conversation_cost_register(*, table: str, column: str) -> None:
    """Where a conversation's cost is kept: `table` (with `id` and `tenant_id`) and its decimal
    `column`. Both are the app's own identifiers (never input); registering again replaces."""
    if not (table.isidentifier() and column.isidentifier()):
        raise ValueError("table and column must be plain identifiers")
    _target[:] = [_Target(table, column)]


def conversation_cost_statement(insert: str, *, then: str = "") -> str:
    """`insert` (an INSERT of usage rows, `ON CONFLICT DO NOTHING` allowed) as the CTE `ins`,
    adding each inserted row's cost to its conversation (same tenant); `then`: the statement's
    main part, which may read `ins` too (e.g. the tenant's debit). Without a registered
    conversation table: `insert` with `then` alone."""
    returning = "RETURNING tenant_id, conversation_id, cost_usd"
    if not _target:
        return f"WITH ins AS ({insert} {returning}) {then}" if then else insert
    target = _target[0]
    add = (
        f"UPDATE {target.table} c SET {target.column} = c.{target.column} + ins.cost_usd "  # noqa: S608  # registered identifiers
        "FROM ins WHERE c.tenant_id = ins.tenant_id AND c.id = ins.conversation_id "
        "AND ins.cost_usd <> 0"
    )
    if not then:
        return f"WITH ins AS ({insert} {returning}) {add}"
    return f"WITH ins AS ({insert} {returning}), cost AS ({add}) {then}"
