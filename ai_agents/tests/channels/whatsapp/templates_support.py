"""Shared pieces of the WhatsApp template tests: the accounts' ids, a binding's templates on
the fake Graph API, and a WhatsApp conversation claimed by the owner."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from ai_agents.models import ChannelBinding, Conversation
from ai_agents.services.whatsapp_templates import whatsapp_templates_sync
from ai_agents.tests.channels.whatsapp.support import NUMBER_A, post, text_payload
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_graph import FakeGraph

WABA_A = "102290129340398"
WABA_B = "203391230451409"
TOKEN_A = "EAAG-token-a"

ORDER_UPDATE = FakeGraph.template(
    "order_update", "Hola {{1}}, su pedido {{2}} ya salió.", language="en_US"
)
SURVEY = FakeGraph.template("encuesta", "¿Pudimos resolver su duda?", category="MARKETING")
NAMED = FakeGraph.template("cita", "Hola {{first_name}}, su cita es el {{fecha}}.", named=True)


def account_ready(
    fake_graph: FakeGraph, binding: ChannelBinding, templates: list[dict[str, Any]]
) -> None:
    """Tenant A's binding with a WABA id whose templates Graph lists, synced once."""
    binding.waba_id = WABA_A
    binding.save(update_fields=["waba_id"])
    fake_graph.templates_put(WABA_A, templates, token=TOKEN_A, number=NUMBER_A)
    whatsapp_templates_sync(binding=binding)


def conversation_aged(client: Any, tenant: Any, hours: float) -> Conversation:
    """The customer wrote `hours` ago (stored by the webhook, no task ran)."""
    post(client, text_payload("hola", f"wamid.aged{int(hours * 10)}"))
    with tenant_scope(tenant):
        conversation = Conversation.objects.get()
        Conversation.objects.filter(pk=conversation.pk).update(
            last_inbound_at=timezone.now() - timedelta(hours=hours)
        )
        conversation.refresh_from_db()
    return conversation


def claimed(api: Any, conversation: Conversation) -> None:
    response = api.post(f"/api/v1/conversations/{conversation.pk}/claim", format="json")
    assert response.status_code == 200, response.content
