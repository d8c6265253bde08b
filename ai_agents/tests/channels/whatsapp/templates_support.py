"""Shared pieces of the WhatsApp template tests (the window, template input and follow-up
ones): the accounts' ids, a binding's templates on the fake Graph API, a WhatsApp conversation
claimed by a person of the staff through the inbox API, and what the staff sent."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.services.channels import channel_update
from ai_agents.services.whatsapp_templates import whatsapp_templates_sync
from ai_agents.tests.channels.whatsapp.support import NUMBER_A, stale_conversation
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


def bot_template_set(
    fake_graph: FakeGraph, binding: ChannelBinding, template: dict[str, Any]
) -> None:
    """Graph lists `template` (Meta's shape) for the binding's account, synced, and the owner
    makes it the bot's template through the channels service (the API's and admin's rules)."""
    account_ready(fake_graph, binding, [template])
    channel_update(
        binding=binding,
        data={"whatsapp_template": {"name": template["name"], "language": template["language"]}},
    )


def staff_api(persona: Any) -> APIClient:
    """The inbox API as `persona`, for tenant A."""
    api = APIClient()
    api.force_login(persona.user)
    api.credentials(HTTP_X_TENANT="acme")
    return api


def claimed(api: Any, conversation: Conversation) -> None:
    response = api.post(f"/api/v1/conversations/{conversation.pk}/claim", format="json")
    assert response.status_code == 200, response.content


def held_conversation(
    client: Any, tenant: Any, persona: Any, *, hours: float
) -> tuple[Conversation, APIClient]:
    """The customer wrote `hours` ago (stored by the webhook, no task ran) and `persona`
    claimed the conversation through the API client returned."""
    conversation = stale_conversation(client, tenant, hours=hours)
    api = staff_api(persona)
    claimed(api, conversation)
    return conversation, api


def template_id(api: APIClient, conversation: Conversation, name: str) -> int:
    """The id the conversation's template list gives `name`."""
    body = api.get(f"/api/v1/conversations/{conversation.pk}/templates").json()
    return next(t["id"] for t in body["templates"] if t["name"] == name)


def staff_messages(tenant: Any) -> list[Message]:
    """What people of the staff sent, oldest first."""
    with tenant_scope(tenant):
        return list(Message.objects.filter(author__isnull=False).order_by("created_at"))
