# ruff: noqa: F811  (the adapter fixture comes from handoff_helpers)
"""REST human handoff: POST /api/v1/conversations/{id}/claim|reply|release|close, by staff
session or API key + staff_email; every error code; other tenants get 404."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from ai_agents.models import Conversation, Message
from ai_agents.tests.handoff_helpers import (
    CHANNEL,
    RecordingAdapter,
    adapter,  # noqa: F401
    agent_for,
    binding_for,
    conversation_make,
    fresh,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing.fixtures import Persona


def _url(conversation: Conversation, action: str) -> str:
    return f"/api/v1/conversations/{conversation.pk}/{action}"


@pytest.fixture
def conversation(owner: Persona) -> Conversation:
    return conversation_make(agent_for(owner.tenant))


@pytest.mark.django_db
def test_claim_reply_release_with_a_staff_session(
    owner_client: Any, owner: Persona, conversation: Conversation
) -> None:
    claimed = owner_client.post(_url(conversation, "claim"), {}, format="json")
    assert claimed.status_code == 200, claimed.content
    body = claimed.json()
    assert body["status"] == "escalated"
    assert body["assigned_to"] == {
        "id": owner.user.pk,
        "name": owner.user.email,
        "email": owner.user.email,
    }
    assert body["claimed_at"]
    assert body["claimed"] is True
    assert body["claim_expires_at"]
    assert body["escalation_reason"] == "user_request"
    assert body["escalation_priority"] == "high"
    assert body["waiting_since"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]

    replied = owner_client.post(
        _url(conversation, "reply"), {"text": "Hola, soy Ana."}, format="json"
    )
    assert replied.status_code == 200, replied.content
    reply = replied.json()
    assert reply["message"]["content"] == "Hola, soy Ana."
    assert reply["message"]["author"] == {"id": owner.user.pk, "name": owner.user.email}
    assert reply["messages"][-1]["author"]["id"] == owner.user.pk
    assert reply["messages"][-1]["metadata"] == {"human": True}
    assert reply["waiting_since"] is None

    released = owner_client.post(_url(conversation, "release"), {}, format="json")
    assert released.status_code == 200
    assert released.json()["status"] == "active"
    assert released.json()["assigned_to"] is None
    assert released.json()["escalation_reason"] == "user_request"  # history kept


@pytest.mark.django_db
def test_close_and_then_every_action_is_a_409_conversation_closed(
    owner_client: Any, conversation: Conversation
) -> None:
    closed = owner_client.post(_url(conversation, "close"), {}, format="json")
    assert closed.status_code == 200
    assert closed.json()["status"] == "closed" and closed.json()["closed_at"]

    actions: tuple[tuple[str, dict[str, str]], ...] = (
        ("claim", {}),
        ("reply", {"text": "hola"}),
        ("release", {}),
        ("close", {}),
    )
    for action, data in actions:
        response = owner_client.post(_url(conversation, action), data, format="json")
        assert response.status_code == 409, action
        assert response.json()["error"]["code"] == "conversation_closed"


@pytest.mark.django_db
def test_claim_held_by_someone_else_is_409_with_holder_and_lease(
    owner_client: Any, member_client: Any, owner: Persona, conversation: Conversation
) -> None:
    owner_client.post(_url(conversation, "claim"), {}, format="json")

    response = member_client.post(_url(conversation, "claim"), {}, format="json")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "conversation_claimed"
    assert error["assigned_to"] == {"id": owner.user.pk, "name": owner.user.email}
    expires = fresh(conversation).claim_expires_at
    assert expires is not None and error["claim_expires_at"] == expires.isoformat()
    assert owner.user.email in error["message"]


@pytest.mark.django_db
def test_expired_lease_is_taken_over_over_rest(
    owner_client: Any, member_client: Any, member: Persona, conversation: Conversation
) -> None:
    owner_client.post(_url(conversation, "claim"), {}, format="json")
    with tenant_scope(conversation.tenant):
        Conversation.objects.filter(pk=conversation.pk).update(
            claim_expires_at=timezone.now() - timedelta(minutes=1)
        )
    listed = owner_client.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert listed["claimed"] is False and listed["status"] == "escalated"

    response = member_client.post(_url(conversation, "claim"), {}, format="json")
    assert response.status_code == 200
    assert response.json()["assigned_to"]["id"] == member.user.pk
    # and the previous holder can no longer reply
    denied = owner_client.post(_url(conversation, "reply"), {"text": "hola"}, format="json")
    assert denied.status_code == 403
    assert denied.json()["error"]["code"] == "not_holder"


@pytest.mark.django_db
def test_reply_release_close_by_someone_who_does_not_hold_it_are_403(
    owner_client: Any, member_client: Any, owner: Persona, conversation: Conversation
) -> None:
    owner_client.post(_url(conversation, "claim"), {}, format="json")
    for action, data in (("reply", {"text": "hola"}), ("release", {}), ("close", {})):
        response = member_client.post(_url(conversation, action), data, format="json")
        assert response.status_code == 403, action
        assert response.json()["error"]["code"] == "not_holder"
    unchanged = fresh(conversation)
    assert (unchanged.status, unchanged.assigned_to_id) == ("escalated", owner.user.pk)
    with tenant_scope(conversation.tenant):
        assert Message.objects.filter(author__isnull=False).count() == 0  # no reply stored


@pytest.mark.django_db
def test_reply_text_must_be_present_and_at_most_4096_characters(
    owner_client: Any, conversation: Conversation
) -> None:
    owner_client.post(_url(conversation, "claim"), {}, format="json")
    for data in ({}, {"text": ""}, {"text": "   "}, {"text": "x" * 4097}, {"text": 5}):
        response = owner_client.post(_url(conversation, "reply"), data, format="json")
        assert response.status_code == 400, data
        assert response.json()["error"]["code"] == "validation_error"
    ok = owner_client.post(_url(conversation, "reply"), {"text": "x" * 4096}, format="json")
    assert ok.status_code == 200
    with tenant_scope(conversation.tenant):
        assert Message.objects.filter(author__isnull=False).count() == 1


@pytest.mark.django_db
def test_api_key_needs_a_staff_email_of_a_member(
    api_a: Any, owner: Persona, outsider: Persona, conversation: Conversation
) -> None:
    missing = api_a.post(_url(conversation, "claim"), {}, format="json")
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "staff_required"

    stranger = api_a.post(
        _url(conversation, "claim"), {"staff_email": outsider.user.email}, format="json"
    )
    assert stranger.status_code == 400
    assert stranger.json()["error"]["code"] == "staff_unknown"
    assert fresh(conversation).assigned_to_id is None  # neither refusal claimed it

    ok = api_a.post(_url(conversation, "claim"), {"staff_email": owner.user.email}, format="json")
    assert ok.status_code == 200
    assert ok.json()["assigned_to"]["id"] == owner.user.pk
    replied = api_a.post(
        _url(conversation, "reply"),
        {"staff_email": owner.user.email.upper(), "text": "Le atiende Ana."},
        format="json",
    )
    assert replied.status_code == 200


@pytest.mark.django_db
def test_other_tenants_get_404_and_change_nothing(
    api_b: Any, outsider_client: Any, outsider: Persona, conversation: Conversation
) -> None:
    for client, extra in ((api_b, {"staff_email": outsider.user.email}), (outsider_client, {})):
        for action in ("claim", "reply", "release", "close"):
            response = client.post(
                _url(conversation, action), {**extra, "text": "hola"}, format="json"
            )
            assert response.status_code == 404, (action, response.content)
            assert response.json()["error"]["code"] == "not_found"
    unchanged = fresh(conversation)
    assert unchanged.status == "escalated" and unchanged.assigned_to_id is None


@pytest.mark.django_db
def test_bad_ids_and_anonymous_calls(client: Any, owner_client: Any) -> None:
    assert owner_client.post("/api/v1/conversations/nope/claim", {}).status_code == 404
    anonymous = client.post("/api/v1/conversations/00000000-0000-0000-0000-000000000000/claim")
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "not_authenticated"


@pytest.mark.django_db
def test_a_rest_reply_on_a_pushing_channel_is_delivered_there(
    owner_client: Any, owner: Persona, adapter: RecordingAdapter, run_tasks: Any
) -> None:
    agent = agent_for(owner.tenant)
    conversation = conversation_make(agent, channel=CHANNEL, binding=binding_for(agent))
    owner_client.post(_url(conversation, "claim"), {}, format="json")
    with run_tasks():
        response = owner_client.post(
            _url(conversation, "reply"), {"text": "Ya lo miro."}, format="json"
        )
    assert response.status_code == 200
    assert adapter.sent == ["Ya lo miro."]


@pytest.mark.django_db
def test_conversation_list_shows_handoff_fields(
    owner_client: Any, api_b: Any, conversation: Conversation
) -> None:
    owner_client.post(_url(conversation, "claim"), {}, format="json")
    rows = owner_client.get("/api/v1/conversations?status=escalated").json()["results"]
    assert [r["id"] for r in rows] == [str(conversation.pk)]
    assert rows[0]["claimed"] is True and rows[0]["waiting_since"]
    assert api_b.get("/api/v1/conversations").json()["results"] == []
