"""POST /api/v1/conversations/{id}/assign|notes|read and GET /api/v1/contacts/{id}: rights
per object (the member's tenant), two tenants and a member of both, errors in words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from ai_agents.models import Conversation, ConversationNote, Message
from ai_agents.tests.handoff_helpers import agent_for, conversation_make, fresh
from erp.tenancy.models import Membership, Tenant
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fixtures import Persona

URL = "/api/v1/conversations"


@pytest.fixture
def both(tenant_a: Tenant, tenant_b: Tenant) -> Any:
    user: Any = UserFactory(username="both@x.test")
    MembershipFactory.create(tenant=tenant_a, user=user, role=Membership.Role.AGENT)
    MembershipFactory.create(tenant=tenant_b, user=user, role=Membership.Role.AGENT)
    client = APIClient()
    client.force_login(user)
    client.user = user  # type: ignore[attr-defined]  # for the assertions
    return client


@pytest.mark.django_db
def test_assign_to_a_teammate_who_then_holds_it(
    owner_client: Any, member_client: Any, member: Persona, owner: Persona, conv_a: Any
) -> None:
    response = owner_client.post(
        f"{URL}/{conv_a.pk}/assign", {"staff_email": member.user.email}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["assigned_to"]["email"] == member.user.email
    assert body["claimed"] is True and body["claimed_at"]
    # the assigner no longer holds it: cannot reply nor claim until the lease ends
    reply = owner_client.post(f"{URL}/{conv_a.pk}/reply", {"text": "hola"}, format="json")
    assert reply.status_code == 403
    claim = owner_client.post(f"{URL}/{conv_a.pk}/claim", {}, format="json")
    assert claim.status_code == 409
    assert claim.json()["error"]["assigned_to"]["name"] == member.user.email
    # the assignee replies
    ok = member_client.post(f"{URL}/{conv_a.pk}/reply", {"text": "Soy yo"}, format="json")
    assert ok.status_code == 200
    # a third person cannot take it from the holder by assigning it to themself
    taken = owner_client.post(
        f"{URL}/{conv_a.pk}/assign", {"staff_email": owner.user.email}, format="json"
    )
    assert taken.status_code == 409
    assert fresh(conv_a).assigned_to_id == member.user.pk


@pytest.mark.django_db
def test_assign_errors_in_words(
    owner_client: Any, outsider: Persona, conv_a: Any, conv_b: Any, api_a: Any, member: Persona
) -> None:
    url = f"{URL}/{conv_a.pk}/assign"
    missing = owner_client.post(url, {}, format="json")
    assert missing.status_code == 400 and "staff_email" in missing.content.decode()
    foreign = owner_client.post(url, {"staff_email": outsider.user.email}, format="json")
    assert foreign.status_code == 400
    assert "no es miembro" in foreign.content.decode()
    not_staff = UserFactory(username="cliente@x.test", is_staff=False)
    MembershipFactory.create(tenant=conv_a.tenant, user=not_staff)
    refused = owner_client.post(url, {"staff_email": not_staff.email}, format="json")
    assert refused.status_code == 400
    other = owner_client.post(
        f"{URL}/{conv_b.pk}/assign", {"staff_email": outsider.user.email}, format="json"
    )
    assert other.status_code == 404
    bad = owner_client.post(url, ["x"], format="json")
    assert bad.status_code == 400
    by_key = api_a.post(url, {"staff_email": member.user.email}, format="json")
    assert by_key.status_code == 200
    assert by_key.json()["assigned_to"]["id"] == member.user.pk
    assert api_a.post(f"{URL}/{conv_b.pk}/assign", {"staff_email": "x@y.z"}).status_code == 404


@pytest.mark.django_db
def test_notes_listed_in_the_detail_and_bounded(
    owner_client: Any, owner: Persona, conv_a: Any, conv_b: Any, outsider_client: Any
) -> None:
    created = owner_client.post(
        f"{URL}/{conv_a.pk}/notes", {"text": "  Cliente VIP, tratar con cuidado "}, format="json"
    )
    assert created.status_code == 201, created.content
    note = created.json()
    assert note["kind"] == "note" and note["text"] == "Cliente VIP, tratar con cuidado"
    assert note["author"] == {"id": owner.user.pk, "name": owner.user.email}
    detail = owner_client.get(f"{URL}/{conv_a.pk}").json()
    assert [n["id"] for n in detail["notes"]] == [note["id"]]
    assert all(m["content"] != note["text"] for m in detail["messages"])
    too_long = owner_client.post(f"{URL}/{conv_a.pk}/notes", {"text": "x" * 4001}, format="json")
    assert too_long.status_code == 400 and "4000" in too_long.content.decode()
    empty = owner_client.post(f"{URL}/{conv_a.pk}/notes", {"text": "  "}, format="json")
    assert empty.status_code == 400
    number = owner_client.post(f"{URL}/{conv_a.pk}/notes", {"text": 5}, format="json")
    assert number.status_code == 400
    foreign = outsider_client.post(f"{URL}/{conv_a.pk}/notes", {"text": "hola"}, format="json")
    assert foreign.status_code == 404
    assert ConversationNote.objects.for_tenant(conv_a.tenant_id).count() == 1


@pytest.mark.django_db
def test_member_of_two_tenants_acts_in_each(both: Any, conv_a: Any, conv_b: Any) -> None:
    for conversation in (conv_a, conv_b):
        note = both.post(f"{URL}/{conversation.pk}/notes", {"text": "visto"}, format="json")
        assert note.status_code == 201, note.content
        assigned = both.post(
            f"{URL}/{conversation.pk}/assign", {"staff_email": both.user.email}, format="json"
        )
        assert assigned.status_code == 200
        assert both.post(f"{URL}/{conversation.pk}/read", {}, format="json").status_code == 200
        contact = both.get(f"/api/v1/contacts/{conversation.contact_id}")
        assert contact.status_code == 200
        assert contact.json()["tenant"]["id"] == conversation.tenant_id
    # narrowed to one tenant by X-Tenant, the other's conversation is not found
    narrowed = both.post(
        f"{URL}/{conv_b.pk}/notes", {"text": "x"}, format="json", HTTP_X_TENANT="acme"
    )
    assert narrowed.status_code == 404


@pytest.mark.django_db
def test_contact_page_lists_its_conversations_across_channels(
    owner: Persona, owner_client: Any, outsider_client: Any, api_b: Any
) -> None:
    agent = agent_for(owner.tenant)
    first = conversation_make(agent, thread="wa", channel="whatsapp", status="closed")
    second = conversation_make(agent, thread="web", channel="webchat")
    Conversation.objects.for_tenant(owner.tenant).filter(pk=second.pk).update(
        contact_id=first.contact_id
    )
    response = owner_client.get(f"/api/v1/contacts/{first.contact_id}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["display_name"] == "Cliente wa"
    assert {c["channel_label"] for c in body["conversations"]} == {"WhatsApp", "Chat web"}
    assert {c["id"] for c in body["conversations"]} == {str(first.pk), str(second.pk)}
    assert outsider_client.get(f"/api/v1/contacts/{first.contact_id}").status_code == 404
    assert api_b.get(f"/api/v1/contacts/{first.contact_id}").status_code == 404
    assert owner_client.get("/api/v1/contacts/not-an-id").status_code == 404


@pytest.mark.django_db
def test_read_by_api_key_needs_a_member(api_a: Any, conv_a: Any, member: Persona) -> None:
    missing = api_a.post(f"{URL}/{conv_a.pk}/read", {}, format="json")
    assert missing.status_code == 400 and "staff_email" in missing.content.decode()
    ok = api_a.post(f"{URL}/{conv_a.pk}/read", {"staff_email": member.user.email}, format="json")
    assert ok.status_code == 200


@pytest.mark.django_db
def test_assignment_and_notes_announce_an_event_after_commit(
    owner_client: Any, member: Persona, conv_a: Any, monkeypatch: Any, run_tasks: Any
) -> None:
    from ai_agents.services import inbox_events

    seen: list[tuple[int, str, str]] = []

    def send(tenant_id: int, conversation_id: str, kind: str, *_along: Any) -> None:
        seen.append((tenant_id, conversation_id, kind))

    # What reaches the stream once the transaction commits: one event per change.
    monkeypatch.setattr(inbox_events, "_send", send)
    with run_tasks():  # runs the on-commit callbacks
        owner_client.post(
            f"{URL}/{conv_a.pk}/assign", {"staff_email": member.user.email}, format="json"
        )
        owner_client.post(f"{URL}/{conv_a.pk}/notes", {"text": "ojo"}, format="json")
        owner_client.post(f"{URL}/{conv_a.pk}/read", {}, format="json")  # not an event
    assert seen == [
        (conv_a.tenant_id, str(conv_a.pk), "assignment"),
        (conv_a.tenant_id, str(conv_a.pk), "note"),
    ]


def _raw_post(client: Any, url: str, body: dict[str, Any]) -> Any:
    """JSON as a browser sends it: json.dumps escapes a lone surrogate as `\\ud800`."""
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["nota\x00", "nota \ud800"])
def test_unstorable_note_or_reply_is_a_400_in_words(
    member_client: Any, member: Persona, conv_a: Any, bad: str
) -> None:
    note = _raw_post(member_client, f"{URL}/{conv_a.pk}/notes", {"text": bad})
    assert note.status_code == 400, note.content
    error = note.json()["error"]
    assert error["code"] == "validation_error" and error["field"] == "text"
    assert "caracteres" in error["message"]
    claim = member_client.post(f"{URL}/{conv_a.pk}/claim", {}, format="json")
    assert claim.status_code == 200
    reply = _raw_post(member_client, f"{URL}/{conv_a.pk}/reply", {"text": bad})
    assert reply.status_code == 400, reply.content
    assert reply.json()["error"]["code"] == "validation_error"
    assert "no se pueden guardar" in reply.json()["error"]["message"]
    assert ConversationNote.objects.for_tenant(conv_a.tenant_id).count() == 0
    assert not Message.objects.for_tenant(conv_a.tenant_id).filter(role="human").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["agent\x00@acme.test", "agent\udc80@acme.test"])
def test_unstorable_staff_email_is_a_400_in_words(
    owner_client: Any, api_a: Any, conv_a: Any, bad: str
) -> None:
    assign = _raw_post(owner_client, f"{URL}/{conv_a.pk}/assign", {"staff_email": bad})
    note = _raw_post(api_a, f"{URL}/{conv_a.pk}/notes", {"text": "hola", "staff_email": bad})
    for refused in (assign, note):
        assert refused.status_code == 400, refused.content
        assert refused.json()["error"]["field"] == "staff_email"
    assert fresh(conv_a).assigned_to_id is None
    assert ConversationNote.objects.for_tenant(conv_a.tenant_id).count() == 0
