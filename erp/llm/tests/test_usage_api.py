"""GET /api/v1/usage: totals for the caller's tenant only, by day, agent or model."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from erp.llm.models import ModelPrice, UsageLog
from erp.llm.usage import usage_record
from erp.tenancy.models import Tenant

URL = "/api/v1/usage"
AGENT = uuid.UUID("11111111-1111-1111-1111-111111111111")
UTC = dt.UTC


def record(tenant: Tenant, at: dt.datetime, **kw: Any) -> UsageLog:
    defaults: dict[str, Any] = {
        "operation": "llm_request",
        "provider": "openai",
        "model": "qwen3:8b",
        "input_tokens": 100,
        "output_tokens": 10,
    }
    log = usage_record(tenant=tenant, **{**defaults, **kw})
    UsageLog.objects.for_tenant(tenant).filter(pk=log.pk).update(created_at=at)
    return log


@pytest.fixture
def ledger(tenant_a: Tenant, tenant_b: Tenant) -> None:
    ModelPrice.objects.create(
        provider="openai",
        model="qwen3:8b",
        input_per_million_usd=Decimal("1000"),  # 100 tokens -> 0.1 USD
        output_per_million_usd=Decimal("10000"),  # 10 tokens -> 0.1 USD
    )
    # Tenant A is in America/Mexico_City (UTC-6): 03:00 UTC on the 2nd is the 1st locally.
    record(tenant_a, dt.datetime(2026, 3, 2, 3, 0, tzinfo=UTC), agent_id=AGENT)
    record(tenant_a, dt.datetime(2026, 3, 2, 18, 0, tzinfo=UTC), agent_id=AGENT)
    record(
        tenant_a,
        dt.datetime(2026, 3, 2, 19, 0, tzinfo=UTC),
        agent_id=AGENT,
        input_tokens=0,
        output_tokens=0,
        success=False,
        error_message="Unavailable",
    )
    record(
        tenant_a,
        dt.datetime(2026, 3, 3, 12, 0, tzinfo=UTC),
        provider="google",
        model="gemma-4-26b-a4b-it",
        input_tokens=500,
        output_tokens=50,
    )
    record(tenant_a, dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC))  # outside the range
    record(tenant_b, dt.datetime(2026, 3, 2, 18, 0, tzinfo=UTC), agent_id=uuid.uuid4())


def get(client: APIClient, **params: str) -> Any:
    return client.get(URL, params)


def test_by_day_in_the_tenant_timezone(api_a: APIClient, ledger: None) -> None:
    response = get(api_a, **{"from": "2026-03-01", "to": "2026-03-31", "group_by": "day"})

    assert response.status_code == 200
    body = response.json()
    assert body["next"] is None
    assert body["results"] == [
        {
            "key": "2026-03-01",
            "input_tokens": 100,
            "output_tokens": 10,
            "total_tokens": 110,
            "cost_usd": "0.200000",
            "calls": 1,
            "errors": 0,
        },
        {
            "key": "2026-03-02",
            "input_tokens": 100,
            "output_tokens": 10,
            "total_tokens": 110,
            "cost_usd": "0.200000",
            "calls": 2,
            "errors": 1,
        },
        {
            "key": "2026-03-03",
            "input_tokens": 500,
            "output_tokens": 50,
            "total_tokens": 550,
            "cost_usd": "0.000000",
            "calls": 1,
            "errors": 0,
        },
    ]
    assert body["totals"] == {
        "input_tokens": 700,
        "output_tokens": 70,
        "total_tokens": 770,
        "cost_usd": "0.400000",
        "calls": 4,
        "errors": 1,
    }


def test_by_agent_and_by_model(api_a: APIClient, ledger: None) -> None:
    span = {"from": "2026-03-01", "to": "2026-03-31"}
    by_agent = get(api_a, **span, group_by="agent").json()["results"]
    assert [(r["key"], r["calls"], r["cost_usd"]) for r in by_agent] == [
        (str(AGENT), 3, "0.400000"),
        (None, 1, "0.000000"),  # outside an agent (correo)
    ]
    by_model = get(api_a, **span, group_by="model").json()["results"]
    assert [(r["key"], r["provider"], r["total_tokens"]) for r in by_model] == [
        ("qwen3:8b", "openai", 220),
        ("gemma-4-26b-a4b-it", "google", 550),
    ]


def test_tenant_b_rows_never_appear_for_tenant_a(
    api_a: APIClient, api_b: APIClient, ledger: None
) -> None:
    span = {"from": "2026-03-01", "to": "2026-03-31"}
    a_agents = {r["key"] for r in get(api_a, **span, group_by="agent").json()["results"]}
    assert a_agents == {str(AGENT), None}
    b = get(api_b, **span, group_by="day").json()
    assert b["totals"]["calls"] == 1
    assert [r["key"] for r in b["results"]] == ["2026-03-02"]


def test_session_staff_see_their_tenant(owner_client: APIClient, ledger: None) -> None:
    body = get(owner_client, **{"from": "2026-03-01", "to": "2026-03-31"}).json()
    assert body["totals"]["calls"] == 4


def test_default_range_is_the_last_30_days_grouped_by_day(
    api_a: APIClient, tenant_a: Tenant
) -> None:
    now = timezone.now()
    record(tenant_a, now - dt.timedelta(hours=1))
    record(tenant_a, now - dt.timedelta(days=45))

    body = api_a.get(URL).json()

    assert body["totals"]["calls"] == 1
    assert len(body["results"]) == 1
    assert dt.date.fromisoformat(body["to"]) - dt.date.fromisoformat(body["from"]) == dt.timedelta(
        days=29
    )


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "2026-13-01"}, "from"),
        ({"from": "01/03/2026"}, "from"),
        ({"to": "mañana"}, "to"),
        ({"group_by": "tenant"}, "group_by"),
        ({"from": "2026-03-10", "to": "2026-03-01"}, "from"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "from"),
    ],
)
def test_bad_params_are_400_naming_the_field(
    api_a: APIClient, params: dict[str, str], field: str
) -> None:
    response = get(api_a, **params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["field"] == field


def test_without_credentials_is_401(client: Any, db: Any) -> None:
    response = client.get(URL)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
