"""Shared pieces of the WhatsApp tests: the reference payloads (under fixtures/), signed posts
to the webhook, a binding per tenant, tenant A's line (fixture `line`), a real worker's
environment, and the messages as stored."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import ChannelBinding, Conversation, Message
from ai_agents.services.agents import agent_create
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph
from erp.testing.fake_http import FakeResponse

FIXTURES = Path(__file__).parent / "fixtures"
APP_SECRET = "3f8b2c9d1e6a4f7b8c0d2e4f6a8b1c3d"  # whatsapp_signature_cases.json
VERIFY_TOKEN = "meatyhamhock"
NUMBER_A = "106540352242922"  # the payloads' phone_number_id
NUMBER_B = "209876543210987"
WA_ID = "16505551234"
URL = "/webhooks/whatsapp"
FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def payload(name: str) -> Any:
    return json.loads((FIXTURES / f"whatsapp_{name}.json").read_text())


def raw(data: Any) -> bytes:
    """Meta's wire form: compact, non-ASCII escaped, `/` escaped."""
    return json.dumps(data, separators=(",", ":")).replace("/", "\\/").encode()


def sign(body: bytes, secret: str = APP_SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(client: Any, data: Any) -> Any:
    body = data if isinstance(data, bytes) else raw(data)
    return client.post(
        URL, data=body, content_type="application/json", HTTP_X_HUB_SIGNATURE_256=sign(body)
    )


def text_payload(
    text: str, message_id: str, *, number: str = NUMBER_A, wa_id: str = WA_ID, name: str = "Ana"
) -> dict[str, Any]:
    data = copy.deepcopy(payload("text"))
    value = data["entry"][0]["changes"][0]["value"]
    value["metadata"]["phone_number_id"] = number
    value["contacts"] = [{"profile": {"name": name}, "wa_id": wa_id}]
    message = value["messages"][0]
    message.update({"id": message_id, "from": wa_id, "text": {"body": text}})
    return data


def with_number(data: dict[str, Any], number: str) -> dict[str, Any]:
    data = copy.deepcopy(data)
    for entry in data["entry"]:
        for change in entry["changes"]:
            change["value"]["metadata"]["phone_number_id"] = number
    return data


def respond(fake_google: Any, text: str, **kw: Any) -> None:
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": text}, **kw))


def binding_create(tenant: Any, number: str, *, token: str, **extra: Any) -> ChannelBinding:
    agent = agent_create(
        tenant=tenant,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )
    return ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant,
        agent=agent,
        type=ChannelBinding.Type.WHATSAPP,
        phone_number_id=number,
        access_token=token,
        **extra,
    )


@pytest.fixture
def wa_settings(settings: Any) -> Any:
    settings.WHATSAPP_APP_SECRET = APP_SECRET
    settings.WHATSAPP_VERIFY_TOKEN = VERIFY_TOKEN
    return settings


@pytest.fixture
def wa_binding(tenant_a: Any, wa_settings: Any, fake_graph: Any) -> ChannelBinding:
    return binding_create(tenant_a, NUMBER_A, token="EAAG-token-a")


def user_messages(tenant: Any) -> list[Message]:
    """The customers' messages of the tenant, oldest first."""
    with tenant_scope(tenant):
        return list(Message.objects.filter(role="user").order_by("created_at"))


def conversations(tenant: Any) -> list[Conversation]:
    """The tenant's conversations, oldest first."""
    with tenant_scope(tenant):
        return list(Conversation.objects.order_by("started_at"))


def bot_reply(tenant: Any) -> Message:
    """The tenant's one assistant message."""
    with tenant_scope(tenant):
        return Message.objects.get(role="assistant")


@dataclass
class Line:
    """Tenant A's WhatsApp number with the fake model and Graph API behind it."""

    client: Client
    tenant: Any
    google: FakeGoogle
    graph: FakeGraph
    run_tasks: Any

    def customer_sends(self, data: Any) -> Any:
        """Posts `data` to the webhook and runs the tasks it queues; returns the response."""
        with self.run_tasks():
            return post(self.client, data)

    def customer_writes(self, answer: str, *graph: FakeResponse) -> Message:
        """The customer's text arrives, the model answers `answer`, the Graph API gives the
        `graph` responses first (then its default success); returns the stored reply."""
        respond(self.google, answer)
        self.graph.push(*graph)
        self.customer_sends(payload("text"))
        return bot_reply(self.tenant)


@pytest.fixture
def line(
    client: Client,
    wa_binding: ChannelBinding,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> Line:
    """Tenant A's WhatsApp line (`wa_binding`), tasks run in-process by `line.customer_sends`.
    Through `run_tasks` it makes Celery eager for the whole test: not for a real worker's test."""
    return Line(client, tenant_a, fake_google, fake_graph, run_tasks)


def worker_env(fake_google: FakeGoogle, fake_graph: FakeGraph, **extra: str) -> dict[str, Any]:
    """The environment of a real worker process (`worker_running`) on the fake model and
    Graph API, retrying sends at once."""
    from django.conf import settings

    return {
        "GOOGLE_AI_BASE_URL": fake_google.url,
        "GOOGLE_AI_API_KEY": settings.GOOGLE_AI_API_KEY,
        "LLM_DEFAULT_MODEL": settings.LLM_DEFAULT_MODEL,
        "WHATSAPP_APP_SECRET": APP_SECRET,
        "WHATSAPP_GRAPH_BASE_URL": fake_graph.url,
        "WHATSAPP_RETRY_BASE_MS": "0",
        **extra,
    }


def stored(agent: Any, text: str, message_id: str, binding: Any = None) -> Message:
    """A WhatsApp message from WA_ID, stored as the webhook stores it (no task queued)."""
    from ai_agents.conversations.inbound import Inbound, message_receive

    message, _ = message_receive(
        agent=agent,
        inbound=Inbound(
            text=text,
            contact={"external_id": WA_ID},
            channel="whatsapp",
            channel_message_id=message_id,
            binding=binding,
        ),
    )
    return message


def stored_unanswered(binding: Any, text: str, message_id: str, *, age_s: float = 90) -> Message:
    """A WhatsApp message from WA_ID stored `age_s` seconds ago whose task never ran."""
    from datetime import timedelta

    from django.utils import timezone

    message = stored(binding.agent, text, message_id, binding)
    with tenant_scope(binding.tenant):
        Message.objects.filter(pk=message.pk).update(
            created_at=timezone.now() - timedelta(seconds=age_s)
        )
    return message


def stale_conversation(client: Client, tenant: Any, hours: float) -> Conversation:
    """The customer wrote `hours` ago (stored, never answered: no task ran)."""
    post(client, text_payload("hola", "wamid.old"))
    with tenant_scope(tenant):
        conversation = Conversation.objects.get()
    wrote_hours_ago(conversation, hours)
    return conversation


def wrote_hours_ago(conversation: Conversation, hours: float) -> None:
    """The customer's last message is dated `hours` ago (the 24-hour window counts from it)."""
    from datetime import timedelta

    from django.utils import timezone

    with tenant_scope(conversation.tenant_id):
        Conversation.objects.filter(pk=conversation.pk).update(
            last_inbound_at=timezone.now() - timedelta(hours=hours)
        )
        conversation.refresh_from_db()


def staff_reply(conversation: Conversation, author: Any, text: str) -> Message:
    """A reply by `author` (staff) stored in the conversation, not yet delivered."""
    with tenant_scope(conversation.tenant_id):
        return Message.objects.create(
            tenant_id=conversation.tenant_id,
            conversation=conversation,
            agent=conversation.agent,
            role=Message.Role.ASSISTANT,
            content=text,
            author=author,
        )
