"""Staff inbox pages: login required, only the member's tenants, the live events endpoint,
the admin link and the HandoffSettings admin (write-only secret)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from django.utils import timezone

from ai_agents.models import HandoffSettings, Message
from ai_agents.services import handoff
from ai_agents.tests.handoff_helpers import agent_for, conversation_make
from erp.tenancy.scoping import tenant_scope
from erp.testing.fixtures import Persona


def _client(persona: Persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


@pytest.mark.django_db
def test_anonymous_visitors_are_sent_to_the_login(client: Any, owner: Persona) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    for url in ("/inbox/", f"/inbox/{conversation.pk}", f"/inbox/{conversation.pk}/events"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/admin/login/")


@pytest.mark.django_db
def test_the_conversation_page_for_members_and_404_for_other_tenants(
    owner: Persona, outsider: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, owner.user)
    handoff.conversation_reply(conversation, owner.user, "Hola, soy Ana.")

    page = _client(owner).get(f"/inbox/{conversation.pk}")

    assert page.status_code == 200
    html = page.content.decode()
    for marker in (
        'id="inbox-claim"',
        'id="inbox-release"',
        'id="inbox-close"',
        'id="inbox-reply-text"',
        'id="inbox-send"',
        'id="inbox-messages"',
        'data-kind="customer"',
        'data-kind="bot"',
        'data-kind="person"',
        'data-tenant="acme"',
    ):
        assert marker in html, marker
    assert 'lang="es"' in html
    assert _client(outsider).get(f"/inbox/{conversation.pk}").status_code == 404
    assert _client(outsider).get(f"/inbox/{conversation.pk}/events").status_code == 404


@pytest.mark.django_db
def test_opening_the_page_renews_the_viewers_lease(owner: Persona) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, owner.user)
    soon = timezone.now() + timedelta(minutes=1)
    with tenant_scope(owner.tenant):
        type(conversation).objects.filter(pk=conversation.pk).update(claim_expires_at=soon)
    client = _client(owner)
    client.get(f"/inbox/{conversation.pk}/events")  # polling does not renew
    conversation.refresh_from_db()
    assert conversation.claim_expires_at == soon
    client.get(f"/inbox/{conversation.pk}")
    conversation.refresh_from_db()
    assert conversation.claim_expires_at > soon + timedelta(minutes=10)


@pytest.mark.django_db
def test_events_bring_new_messages_and_state_after_the_cursor(
    owner: Persona, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    client = _client(member)
    first = client.get(f"/inbox/{conversation.pk}/events").json()
    assert [m["kind"] for m in first["messages"]] == ["customer", "bot"]
    assert first["state"]["claimed"] is False and first["state"]["can_claim"] is True
    cursor = first["cursor"]

    handoff.conversation_claim(conversation, owner.user)
    with tenant_scope(owner.tenant):
        new = Message.objects.create(
            tenant=owner.tenant,
            conversation=conversation,
            agent=conversation.agent,
            role="user",
            content="¿Hola?",
            created_at=timezone.now() + timedelta(minutes=5),
        )
    later = client.get(f"/inbox/{conversation.pk}/events?after={quote(cursor)}").json()

    ids = [m["id"] for m in later["messages"]]
    assert str(new.pk) in ids
    assert later["state"]["holder"] == owner.user.email
    assert later["state"]["holder_is_me"] is False
    # Held by a colleague: neither claim nor reply until the lease ends; who and since when.
    assert later["state"]["can_claim"] is False
    assert later["state"]["holder_since"] is not None and later["state"]["holder_since_text"]
    assert later["state"]["can_reply"] is False and later["state"]["can_release"] is False
    assert later["cursor"] == new.created_at.isoformat()
    for bad in ("nonsense", "2026-13-45T99:00:00"):
        assert (
            len(client.get(f"/inbox/{conversation.pk}/events?after={bad}").json()["messages"]) == 3
        )


@pytest.mark.django_db
def test_the_admin_links_to_the_inbox(owner: Persona) -> None:
    html = _client(owner).get("/admin/").content.decode()
    assert 'href="/inbox/"' in html


@pytest.mark.django_db
def test_handoff_settings_admin_keeps_the_secret_write_only(
    owner: Persona, outsider: Persona
) -> None:
    client = _client(owner)
    response = client.post(
        "/admin/ai_agents/handoffsettings/add/",
        {
            "notify_emails": "soporte@acme.test\njefa@acme.test",
            "webhook_url": "https://hooks.acme.test/erp",
            "webhook_secret": "muy-secreto",
            "claim_lease_minutes": "20",
            "renotify_minutes": "30",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    row = HandoffSettings.objects.for_tenant(owner.tenant).get()
    assert row.webhook_secret == "muy-secreto"
    assert row.notify_emails == ["soporte@acme.test", "jefa@acme.test"]

    change_url = f"/admin/ai_agents/handoffsettings/{row.pk}/change/"
    form = client.get(change_url).content.decode()
    assert "muy-secreto" not in form
    client.post(
        change_url,
        {
            "notify_emails": "soporte@acme.test",
            "webhook_url": "https://hooks.acme.test/erp",
            "webhook_secret": "",
            "claim_lease_minutes": "25",
            "renotify_minutes": "0",
        },
    )
    row.refresh_from_db()
    assert row.webhook_secret == "muy-secreto"  # empty keeps the stored secret
    assert (row.claim_lease_minutes, row.renotify_minutes) == (25, 0)  # 0: never remind
    form = client.get(change_url).content.decode()
    assert "recordar al equipo cada (minutos)" in form.lower()
    too_long = {"claim_lease_minutes": "25", "renotify_minutes": "2000", "notify_emails": ""}
    assert client.post(change_url, too_long).status_code == 200  # the form, with its error
    row.refresh_from_db()
    assert row.renotify_minutes == 0
    assert _client(outsider).get(change_url).status_code == 404


def test_staff_see_whether_an_outbound_message_was_delivered_and_why_not(
    owner: Persona,
) -> None:
    from ai_agents.models import Delivery

    conversation = conversation_make(agent_for(owner.tenant))
    with tenant_scope(owner.tenant):
        bot = Message.objects.get(conversation=conversation, role="assistant")
        Message.objects.filter(pk=bot.pk).update(delivery_status="failed")
        Delivery.objects.create(
            tenant=owner.tenant,
            message=bot,
            channel="whatsapp",
            status="failed",
            error_code="outside_24h_window",
            error_message="(#131047) Re-engagement message",
        )
    client = _client(owner)

    page = client.get(f"/inbox/{conversation.pk}").content.decode()
    events = client.get(f"/inbox/{conversation.pk}/events").json()

    assert 'data-delivery="failed"' in page
    assert "No entregado: Han pasado más de 24 horas" in page
    assert "Re-engagement" not in page  # the provider's own text is never shown, only words
    [row] = [m for m in events["messages"] if m["kind"] == "bot"]
    assert row["delivery"].startswith("No entregado: Han pasado más de 24 horas")
    [customer] = [m for m in events["messages"] if m["kind"] == "customer"]
    assert customer["delivery"] == ""
