"""A conversation's cost in GET /api/v1/conversations/{id}: its usage rows (model tokens,
transcription and channel messages), each tenant's only under that tenant; the same sum kept on
the conversation (`Conversation.cost_usd`) by the ledger's statements, as the statistics read
it."""

from __future__ import annotations

import zoneinfo
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from ai_agents.models import Conversation
from ai_agents.services.stats_facts import conversation_cost_backfill
from erp.llm.models import ModelPrice, UsageLog
from erp.llm.pricing import channel_charge_record
from erp.llm.selectors import conversation_costs
from erp.llm.usage import usage_record
from erp.tenancy.models import Membership, Tenant
from erp.tenancy.scoping import all_tenants
from erp.testing.factories import MembershipFactory, UserFactory

URL = "/api/v1/conversations"

# The seed rates (not a transactional test's flushed table).
pytestmark = pytest.mark.usefixtures("channel_prices")


def _costs(conversation: Conversation, *, channel_key: str) -> None:
    """A model call (0.0025), a transcription (0.0006) and a MX service message (0.0085)."""
    tenant = Tenant.objects.get(pk=conversation.tenant_id)
    ModelPrice.objects.get_or_create(
        provider="google",
        model="priced-model",
        defaults={"input_per_million_usd": Decimal("1"), "output_per_million_usd": Decimal("3")},
    )
    ids: dict[str, Any] = {"conversation_id": conversation.pk, "agent_id": conversation.agent_id}
    usage_record(
        tenant=tenant,
        operation="llm_request",
        provider="google",
        model="priced-model",
        input_tokens=1000,
        output_tokens=500,
        **ids,
    )
    usage_record(
        tenant=tenant,
        operation="transcription",
        provider="google",
        model="priced-model",
        input_tokens=600,
        **ids,
    )
    channel_charge_record(
        tenant=tenant,
        charge_key=channel_key,
        channel="whatsapp",
        phone="+52 55 1234 5678",
        category="service",
        **ids,
    )


@pytest.mark.django_db
def test_the_detail_sums_model_transcription_and_channel(
    owner_client: Any, conv_a: Conversation
) -> None:
    _costs(conv_a, channel_key="whatsapp:a")

    body = owner_client.get(f"{URL}/{conv_a.pk}").json()

    assert body["cost_usd"] == "0.011600"
    assert body["cost"] == {
        "model_usd": "0.002500",
        "transcription_usd": "0.000600",
        "channel_usd": "0.008500",
        "total_usd": "0.011600",
    }


@pytest.mark.django_db
def test_a_conversation_without_usage_costs_zero(owner_client: Any, conv_a: Conversation) -> None:
    assert owner_client.get(f"{URL}/{conv_a.pk}").json()["cost_usd"] == "0.000000"


@pytest.mark.django_db
def test_costs_stay_with_their_tenant(
    owner_client: Any, outsider_client: Any, conv_a: Conversation, conv_b: Conversation
) -> None:
    _costs(conv_a, channel_key="whatsapp:same")
    _costs(conv_b, channel_key="whatsapp:same")  # the same key in another tenant bills too
    rows_before = UsageLog.objects.unscoped().count()

    assert outsider_client.get(f"{URL}/{conv_a.pk}").status_code == 404
    assert owner_client.get(f"{URL}/{conv_b.pk}").status_code == 404
    # a tenant's selector never sums another tenant's rows
    foreign = conversation_costs(tenant_id=conv_a.tenant_id, conversation_ids=[conv_b.pk])
    own = conversation_costs(tenant_id=conv_b.tenant_id, conversation_ids=[conv_b.pk])
    assert foreign[conv_b.pk].total_usd == Decimal("0")
    assert own[conv_b.pk].total_usd == Decimal("0.011600")
    assert UsageLog.objects.unscoped().count() == rows_before == 6


@pytest.mark.django_db
def test_a_member_of_both_tenants_sees_each_cost_under_its_tenant(
    tenant_a: Tenant, tenant_b: Tenant, conv_a: Conversation, conv_b: Conversation
) -> None:
    user: Any = UserFactory(username="both@x.test")
    MembershipFactory.create(tenant=tenant_a, user=user, role=Membership.Role.AGENT)
    MembershipFactory.create(tenant=tenant_b, user=user, role=Membership.Role.AGENT)
    client = APIClient()
    client.force_login(user)
    _costs(conv_a, channel_key="whatsapp:a")

    seen_a = client.get(f"{URL}/{conv_a.pk}").json()
    seen_b = client.get(f"{URL}/{conv_b.pk}").json()

    assert (seen_a["tenant"]["id"], seen_a["cost_usd"]) == (tenant_a.pk, "0.011600")
    assert (seen_b["tenant"]["id"], seen_b["cost_usd"]) == (tenant_b.pk, "0.000000")
    narrowed = client.get(f"{URL}/{conv_b.pk}", HTTP_X_TENANT=tenant_a.slug)
    assert narrowed.status_code == 404


def _ledger_sum(conversation: Conversation) -> Decimal:
    rows = UsageLog.objects.unscoped().filter(conversation_id=conversation.pk)
    return sum((row.cost_usd for row in rows), Decimal("0"))


def _stats_cost(client: Any, conversation: Conversation) -> str:
    tenant = Tenant.objects.get(pk=conversation.tenant_id)
    day = conversation.started_at.astimezone(zoneinfo.ZoneInfo(tenant.timezone or "UTC")).date()
    response = client.get("/api/v1/stats", {"from": day.isoformat(), "to": day.isoformat()})
    assert response.status_code == 200, response.content
    return response.json()["cost_usd"]


@pytest.mark.django_db
@pytest.mark.parametrize("credits_mode", ["enforce", "off"])
def test_the_conversation_keeps_the_ledger_sum_and_the_stats_show_it(
    owner_client: Any,
    outsider_client: Any,
    conv_a: Conversation,
    conv_b: Conversation,
    settings: Any,
    credits_mode: str,
) -> None:
    settings.AI_CREDITS_MODE = credits_mode
    balance = Tenant.objects.get(pk=conv_a.tenant_id).ai_credit_balance_usd
    _costs(conv_a, channel_key="whatsapp:a")
    _costs(conv_b, channel_key="whatsapp:b")  # another tenant's costs stay on its conversation
    tenant = Tenant.objects.get(pk=conv_a.tenant_id)
    # the same message billed again (a retried send, a redelivered webhook): counted once
    channel_charge_record(
        tenant=tenant,
        charge_key="whatsapp:a",
        channel="whatsapp",
        phone="+52 55 1234 5678",
        category="service",
        conversation_id=conv_a.pk,
    )

    kept = Conversation.objects.unscoped().get(pk=conv_a.pk).cost_usd
    assert kept == _ledger_sum(conv_a) == Decimal("0.011600")
    assert Conversation.objects.unscoped().get(pk=conv_b.pk).cost_usd == Decimal("0.011600")
    assert _stats_cost(owner_client, conv_a) == "0.011600"
    assert _stats_cost(outsider_client, conv_b) == "0.011600"
    # migration 0026's backfill (the ledger summed again) finds the same
    with all_tenants(), connection.cursor() as cursor:
        conversation_cost_backfill(cursor=cursor)
    assert Conversation.objects.unscoped().get(pk=conv_a.pk).cost_usd == Decimal("0.011600")
    # the model's and the transcription's cost are still debited from the AI credit, the
    # channel's is not (Meta's bill)
    debited = balance - Tenant.objects.get(pk=conv_a.tenant_id).ai_credit_balance_usd
    assert debited == (Decimal("0.003100") if credits_mode == "enforce" else Decimal("0"))


@pytest.mark.django_db
def test_usage_without_a_conversation_changes_no_conversation(conv_a: Conversation) -> None:
    tenant = Tenant.objects.get(pk=conv_a.tenant_id)
    ModelPrice.objects.get_or_create(
        provider="google",
        model="priced-model",
        defaults={"input_per_million_usd": Decimal("1"), "output_per_million_usd": Decimal("3")},
    )

    usage_record(
        tenant=tenant, operation="embedding", provider="google", model="priced-model",
        input_tokens=1000,
    )  # fmt: skip

    assert Conversation.objects.unscoped().get(pk=conv_a.pk).cost_usd == Decimal("0")
    assert UsageLog.objects.unscoped().filter(operation="embedding").count() == 1


def test_the_cost_migration_rebuilds_the_covering_index_without_blocking_writes() -> None:
    """Migration 0026 adds cost_usd to conversations' covering index: a plain CREATE INDEX
    would hold back every inbound message (a write to its conversation) while the whole table
    is read. What the migration runs on the database builds the new index CONCURRENTLY, drops
    the old one CONCURRENTLY and renames (no plain AddIndex / RemoveIndex)."""
    from importlib import import_module

    from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
    from django.db import migrations

    module = import_module("ai_agents.migrations.0026_conversation_cost")
    run: list[Any] = []
    for operation in module.Migration.operations:
        if isinstance(operation, migrations.SeparateDatabaseAndState):
            run.extend(operation.database_operations)
        else:
            run.append(operation)
    on_indexes = [o for o in run if isinstance(o, migrations.AddIndex | migrations.RemoveIndex)]
    assert on_indexes, "the migration changes the covering index"
    assert all(isinstance(o, AddIndexConcurrently | RemoveIndexConcurrently) for o in on_indexes), (
        on_indexes
    )
    assert module.Migration.atomic is False


@pytest.mark.django_db
def test_the_covering_index_holds_the_cost_under_its_own_name() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname LIKE %s",
            [Conversation._meta.db_table, "conv_tenant_started%"],
        )
        found = dict(cursor.fetchall())
    assert list(found) == ["conv_tenant_started"]
    assert "cost_usd" in found["conv_tenant_started"]
