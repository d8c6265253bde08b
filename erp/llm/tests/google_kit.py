"""What the Google gateway tests share: the model, a fast retry policy, a request, the ledger."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from erp.llm.gateway import RetryPolicy
from erp.llm.models import UsageLog
from erp.llm.types import LlmRequest, Message
from erp.tenancy.models import Tenant

MODEL = "gemma-4-26b-a4b-it"
FAST = RetryPolicy(timeout_s=5, attempts=4, base_delay_s=0.01, factor=2, max_delay_s=1)


def ask(text: str = "¿Abren el sábado?", **kw: Any) -> LlmRequest:
    return LlmRequest(messages=[Message("user", text)], system="Eres la panadería.", **kw)


def rows(tenant: Tenant) -> list[UsageLog]:
    return list(UsageLog.objects.for_tenant(tenant).order_by("created_at"))


def balance(tenant: Tenant) -> Decimal:
    return Tenant.objects.get(pk=tenant.pk).ai_credit_balance_usd
