"""Characters PostgreSQL cannot store (NUL, lone surrogates) in what customers send, through
each channel's real entry point: the message is always stored, with them replaced, and the
sender gets an answer, never a 500 that makes a provider retry forever."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from ai_agents.channels.email import adapter as email_channel
from ai_agents.models import ChannelBinding, Contact, Conversation, Message
from ai_agents.services.agents import agent_create
from ai_agents.tests.channels.whatsapp.support import post as wa_post
from ai_agents.tests.channels.whatsapp.support import text_payload
from erp.retry import Backoff
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle

FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}
ORIGIN = "https://shop.example"
REPLACEMENT = "\ufffd"


def _agent(tenant: Any) -> Any:
    return agent_create(
        tenant=tenant,
        data={"name": "Lucía", "system_prompt": "Eres Lucía.", "processing_config": FAST},
    )


def _user_messages(tenant: Any) -> list[Message]:
    with tenant_scope(tenant):
        return list(Message.objects.filter(role="user").order_by("created_at"))


def _respond(fake: FakeGoogle, text: str) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text, "confidence": 0.9}))


# --- e-mail ----------------------------------------------------------------------------------

MAIL = (
    "From: =?utf-8?q?Ana=00_P=C3=A9rez?= <ana@cliente.es>\r\n"
    "To: ayuda@tienda.es\r\n"
    "Subject: =?utf-8?q?Pedido=00_12?=\r\n"
    "Message-ID: <nul-1@cliente.es>\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "Content-Transfer-Encoding: quoted-printable\r\n"
    "\r\n"
    "Hola=00, =C2=BFd=C3=B3nde est=C3=A1 mi pedido?\r\n"
)


@pytest.fixture(autouse=True)
def _no_retry_wait(monkeypatch: Any) -> None:
    monkeypatch.setattr(email_channel, "SEND_BACKOFF", Backoff(attempts=3, base_delay_s=0.0))


@pytest.mark.django_db
def test_a_mail_with_nul_bytes_is_stored_cleaned_and_answered(
    client: Client, tenant_a: Any, tenant_b: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    agent = _agent(tenant_a)
    binding = ChannelBinding.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, agent=agent, type=ChannelBinding.Type.EMAIL, address="ayuda@tienda.es"
    )
    raw_nul = MAIL.replace("Hola=00", "Hola\x00 raw").encode()
    _respond(fake_google, "Está en camino.")
    _respond(fake_google, "Está en camino.")

    with run_tasks():
        qp = client.post(f"/webhooks/email/{binding.token}", MAIL.encode(), "message/rfc822")
    with run_tasks():
        raw = client.post(
            f"/webhooks/email/{binding.token}",
            raw_nul.replace(b"<nul-1@", b"<nul-2@"),
            "message/rfc822",
        )

    assert (qp.status_code, raw.status_code) == (200, 200)
    assert (qp.json()["status"], raw.json()["status"]) == ("accepted", "accepted")
    texts = [m.content for m in _user_messages(tenant_a)]
    assert texts == [
        f"Asunto: Pedido{REPLACEMENT} 12\n\nHola{REPLACEMENT}, ¿dónde está mi pedido?",
        f"Asunto: Pedido{REPLACEMENT} 12\n\nHola{REPLACEMENT} raw, ¿dónde está mi pedido?",
    ]
    with tenant_scope(tenant_a):
        assert Contact.objects.get().name == f"Ana{REPLACEMENT} Pérez"
        subjects = {c.channel_data["subject"] for c in Conversation.objects.all()}
        assert subjects == {f"Pedido{REPLACEMENT} 12"}
        assert Message.objects.filter(role="assistant").count() == 2
    assert _user_messages(tenant_b) == []


# --- WhatsApp --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_whatsapp_text_with_nul_and_a_lone_surrogate_is_stored_cleaned(
    client: Client, wa_binding: Any, tenant_b: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    _respond(fake_google, "Hola Ana.")
    data = text_payload("hola\x00 \ud83d!", "wamid.nul")
    data["entry"][0]["changes"][0]["value"]["contacts"][0]["profile"]["name"] = "An\x00a"
    # Meta escapes non-ASCII: a lone surrogate arrives as "\\ud83d" (valid JSON, not UTF-8).
    with run_tasks():
        response = wa_post(client, data)

    assert response.status_code == 200
    assert response.json()["stored"] == 1
    [message] = _user_messages(wa_binding.tenant)
    assert message.content == f"hola{REPLACEMENT} {REPLACEMENT}!"
    with tenant_scope(wa_binding.tenant):
        assert Contact.objects.get().name == f"An{REPLACEMENT}a"
        assert Message.objects.filter(role="assistant").count() == 1
    assert _user_messages(tenant_b) == []


# --- web chat --------------------------------------------------------------------------------


def _webchat(tenant: Any) -> ChannelBinding:
    return ChannelBinding.objects.for_tenant(tenant).create(
        tenant=tenant,
        agent=_agent(tenant),
        type=ChannelBinding.Type.WEBCHAT,
        allowed_origins=[ORIGIN],
    )


@pytest.mark.django_db
def test_a_web_chat_text_with_nul_and_a_lone_surrogate_is_stored_cleaned(
    tenant_a: Any, tenant_b: Any, fake_google: FakeGoogle
) -> None:
    binding = _webchat(tenant_a)
    browser = Client(HTTP_ORIGIN=ORIGIN)
    token = browser.post(
        f"/api/webchat/{binding.token}/sessions", "{}", content_type="application/json"
    ).json()["token"]
    _respond(fake_google, "Dígame.")

    response = browser.post(
        f"/api/webchat/{binding.token}/messages",
        '{"text": "hola\\u0000 \\ud800 fin", "client_message_id": "c\\u00001"}',
        content_type="application/json",
        HTTP_X_WEBCHAT_TOKEN=token,
    )

    assert response.status_code == 200
    assert response.json()["reply"]["text"] == "Dígame."
    [message] = _user_messages(tenant_a)
    assert message.content == f"hola{REPLACEMENT} {REPLACEMENT} fin"
    assert _user_messages(tenant_b) == []


# --- REST API --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_metadata_with_unstorable_characters_is_stored_cleaned(
    api_a: Any, api_b: Any, tenant_a: Any, tenant_b: Any, fake_google: FakeGoogle
) -> None:
    agent = _agent(tenant_a)
    _respond(fake_google, "Claro.")
    body = (
        '{"contact": {"external_id": "c-1", "name": "Ana"}, "text": "hola",'
        ' "metadata": {"k\\u0000": "v\\u0000", "nested": [{"x": "\\udfff"}]}}'
    )

    response = api_a.post(
        f"/api/v1/agents/{agent.pk}/messages", body, content_type="application/json"
    )
    foreign = api_b.post(
        f"/api/v1/agents/{agent.pk}/messages", body, content_type="application/json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["reply"]["text"] == "Claro."
    assert foreign.status_code == 404
    [message] = _user_messages(tenant_a)
    assert message.content == "hola"
    assert message.metadata["channel_metadata"] == {
        "k" + REPLACEMENT: "v" + REPLACEMENT,
        "nested": [{"x": REPLACEMENT}],
    }
    assert _user_messages(tenant_b) == []


@pytest.mark.django_db
def test_api_text_with_a_lone_surrogate_is_refused_with_400(
    api_a: Any, tenant_a: Any, fake_google: FakeGoogle
) -> None:
    agent = _agent(tenant_a)
    body = '{"contact": {"external_id": "c-1"}, "text": "hola \\ud800 fin"}'

    response = api_a.post(
        f"/api/v1/agents/{agent.pk}/messages", body, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "text"
    assert _user_messages(tenant_a) == []
    assert fake_google.generate_requests == []


@pytest.mark.django_db
def test_whatsapp_ids_and_names_longer_than_their_columns_are_stored_bounded(
    client: Client, wa_binding: Any, tenant_b: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    _respond(fake_google, "Hola.")
    long_id = "wamid." + "x" * 5000
    data = text_payload("hola", long_id, wa_id="3" * 500, name="N" * 5000)

    with run_tasks():
        first = wa_post(client, data)
    with run_tasks():
        redelivered = wa_post(client, data)

    assert (first.status_code, redelivered.status_code) == (200, 200)
    assert (first.json()["stored"], redelivered.json()["stored"]) == (1, 0)
    [message] = _user_messages(wa_binding.tenant)
    assert message.content == "hola"
    assert len(message.channel_message_id or "") <= 255
    with tenant_scope(wa_binding.tenant):
        contact = Contact.objects.get()
        assert contact.name == "N" * 200
        assert len(contact.external_id) <= 100
        assert Message.objects.filter(role="assistant").count() == 1
    assert _user_messages(tenant_b) == []
