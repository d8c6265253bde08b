"""Escalation notices: e-mail to the tenant's team and the optional webhook signed with
HMAC-SHA256 over the exact raw body, retried on 5xx, never on 4xx."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core import mail

from ai_agents import tasks
from ai_agents.models import HandoffSettings
from ai_agents.services.handoff import staff_notify
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.retry import Backoff
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fake_http import FakeResponse, FakeServer
from erp.testing.fixtures import Persona

SECRET = "s3cr3t-ñ"


@pytest.fixture
def receiver(settings: Any) -> Iterator[FakeServer]:
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True  # the fake receiver lives on loopback
    with FakeServer() as server:
        yield server


@pytest.fixture
def no_backoff(monkeypatch: Any) -> None:
    backoff = Backoff(attempts=tasks.WEBHOOK_MAX_RETRIES + 1, base_delay_s=0.01)
    monkeypatch.setattr(tasks, "WEBHOOK_BACKOFF", backoff)


def _webhook(tenant: Any, server: FakeServer, secret: str = SECRET) -> HandoffSettings:
    return HandoffSettings.objects.for_tenant(tenant).create(
        tenant=tenant, webhook_url=f"{server.url}/hooks/erp", webhook_secret=secret
    )


@pytest.mark.django_db
def test_escalation_mails_every_member_with_an_email_in_spanish(
    owner: Persona, member: Persona, outsider: Persona, settings: Any
) -> None:
    settings.SITE_URL = "https://erp.example.com"
    no_email = UserFactory(username="sin-correo", email="")
    MembershipFactory(tenant=owner.tenant, user=no_email, role="agent")
    conversation = conversation_make(
        agent_for(owner.tenant), customer_text="Quiero hablar con una persona, ¡ya!"
    )

    result = tasks.conversation_escalated_notify(str(conversation.pk))

    assert result["emailed"] == 2 and result["webhook"] is False
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sorted(sent.to) == sorted([owner.user.email, member.user.email])
    assert outsider.user.email not in sent.to
    assert sent.subject == (
        "[Acme] Conversación escalada (prioridad Alta): El cliente pidió una persona"
    )
    assert f"https://erp.example.com/inbox/{conversation.pk}" in sent.body
    assert "Motivo: El cliente pidió una persona" in sent.body
    assert "Prioridad: Alta" in sent.body
    assert "user_request" not in sent.body + sent.subject
    assert "Cliente cli-1" in sent.body
    assert "Quiero hablar con una persona, ¡ya!" in sent.body


@pytest.mark.django_db
def test_configured_recipients_replace_the_team(owner: Persona) -> None:
    HandoffSettings.objects.for_tenant(owner.tenant).create(
        tenant=owner.tenant, notify_emails=["soporte@acme.test", "jefa@acme.test"]
    )
    conversation = conversation_make(agent_for(owner.tenant))
    tasks.conversation_escalated_notify(str(conversation.pk))
    assert mail.outbox[0].to == ["soporte@acme.test", "jefa@acme.test"]


@pytest.mark.django_db
def test_webhook_is_signed_over_the_exact_raw_body(
    owner: Persona, receiver: FakeServer, run_tasks: Any
) -> None:
    receiver.route("POST", r"/hooks/erp", FakeResponse.json({"ok": True}))
    _webhook(owner.tenant, receiver)
    conversation = conversation_make(agent_for(owner.tenant), channel="whatsapp")

    with run_tasks():
        tasks.conversation_escalated_notify.delay(str(conversation.pk))

    assert len(receiver.requests) == 1
    request = receiver.requests[0]
    expected = hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert request.header("x-signature-256") == f"sha256={expected}"
    assert request.header("content-type") == "application/json"
    body = json.loads(request.body)
    assert body["event"] == "conversation.escalated"
    assert body["tenant"] == "acme"
    assert body["conversation_id"] == str(conversation.pk)
    assert body["reason"] == "user_request" and body["priority"] == "high"
    assert body["channel"] == "whatsapp"
    assert body["contact"]["external_id"] == "cli-1"
    assert body["inbox_url"].endswith(f"/inbox/{conversation.pk}")
    assert body["occurred_at"]
    assert len(mail.outbox) == 1  # the e-mail went too


@pytest.mark.django_db
def test_webhook_retries_5xx_then_succeeds_without_resending_the_email(
    owner: Persona, receiver: FakeServer, run_tasks: Any, no_backoff: None
) -> None:
    receiver.route(
        "POST",
        r"/hooks/erp",
        receiver.sequence(
            FakeResponse.json({"error": "busy"}, status=503),
            FakeResponse.json({"error": "busy"}, status=503),
            FakeResponse.json({"ok": True}),
        ),
    )
    _webhook(owner.tenant, receiver)
    conversation = conversation_make(agent_for(owner.tenant))

    with run_tasks():
        tasks.conversation_escalated_notify.delay(str(conversation.pk))

    assert len(receiver.requests) == 3
    assert len({r.body for r in receiver.requests}) == 1  # the same bytes each time
    signatures = {r.header("x-signature-256") for r in receiver.requests}
    assert len(signatures) == 1
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_webhook_gives_up_after_five_retries(
    owner: Persona, receiver: FakeServer, run_tasks: Any, no_backoff: None
) -> None:
    receiver.route("POST", r"/hooks/erp", FakeResponse.json({"error": "down"}, status=500))
    _webhook(owner.tenant, receiver)
    conversation = conversation_make(agent_for(owner.tenant))
    with run_tasks():
        tasks.conversation_escalated_notify.delay(str(conversation.pk))
    assert len(receiver.requests) == 1 + tasks.WEBHOOK_MAX_RETRIES


@pytest.mark.django_db
def test_webhook_4xx_is_not_retried(
    owner: Persona, receiver: FakeServer, run_tasks: Any, no_backoff: None
) -> None:
    receiver.route("POST", r"/hooks/erp", FakeResponse.json({"error": "bad"}, status=400))
    _webhook(owner.tenant, receiver)
    conversation = conversation_make(agent_for(owner.tenant))
    with run_tasks():
        tasks.conversation_escalated_notify.delay(str(conversation.pk))
    assert len(receiver.requests) == 1


@pytest.mark.django_db
def test_webhook_to_a_private_address_is_refused_by_the_ssrf_guard(
    owner: Persona, run_tasks: Any, settings: Any
) -> None:
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = False
    with FakeServer() as server:
        server.route("POST", r"/hooks/erp", FakeResponse.json({"ok": True}))
        _webhook(owner.tenant, server)
        conversation = conversation_make(agent_for(owner.tenant))
        with run_tasks():
            tasks.conversation_escalated_notify.delay(str(conversation.pk))
        assert server.requests == []


@pytest.mark.django_db
def test_staff_notify_reports_other_events_with_their_text(
    owner: Persona, outsider: Persona, receiver: FakeServer, run_tasks: Any
) -> None:
    receiver.route("POST", r"/hooks/erp", FakeResponse.json({"ok": True}))
    _webhook(owner.tenant, receiver)
    conversation = conversation_make(agent_for(owner.tenant), channel="whatsapp")
    conversation_make(agent_for(outsider.tenant), channel="whatsapp")

    with run_tasks():
        staff_notify(conversation, "whatsapp.window_closed", "Fuera de la ventana de 24 h.")

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [owner.user.email]
    # People read the notice's words, not its code (the webhook keeps the code).
    subject = mail.outbox[0].subject
    assert subject == "[Acme] Aviso sobre una conversación: Fuera de la ventana de 24 h."
    assert "Fuera de la ventana de 24 h." in mail.outbox[0].body
    body = receiver.requests[0].json()
    assert body["event"] == "whatsapp.window_closed"
    assert body["text"] == "Fuera de la ventana de 24 h."


@pytest.mark.django_db
def test_an_escalation_in_the_pipeline_notifies_the_team(
    owner_client: Any, owner: Persona, api_a: Any, run_tasks: Any, fake_google: Any
) -> None:
    agent = agent_for(owner.tenant)
    with run_tasks():
        response = api_a.post(
            f"/api/v1/agents/{agent.pk}/messages",
            {"contact": {"external_id": "c-1"}, "text": "Quiero hablar con una persona"},
            format="json",
        )
    assert response.status_code == 200, response.content
    assert response.json()["conversation_status"] == "escalated"
    assert len(mail.outbox) == 1
    assert f"/inbox/{response.json()['conversation_id']}" in mail.outbox[0].body
