"""`escalated_to` names the person who took the escalation; `POST
/api/v1/conversations/{id}/feedback` writes `satisfaction_rating` (1-5) and `feedback_text`,
both in the conversation API; bad input is a 400 JSON error; other tenants get 404."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from ai_agents.models import Conversation
from ai_agents.services import handoff
from ai_agents.tests.handoff_helpers import agent_for, conversation_make, fresh
from erp.tenancy.models import Membership
from erp.testing.factories import MembershipFactory
from erp.testing.fixtures import Persona


def _feedback(client: Any, conversation: Conversation, body: Any) -> Any:
    return client.post(f"/api/v1/conversations/{conversation.pk}/feedback", body, format="json")


@pytest.mark.django_db
def test_escalated_to_is_the_person_who_claimed_and_stays_after_release(
    owner_client: Any, owner: Persona, member: Persona, api_a: Any
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    url = f"/api/v1/conversations/{conversation.pk}"
    assert api_a.get(url).json()["escalated_to"] is None

    claimed = owner_client.post(f"{url}/claim", {}, format="json").json()
    assert claimed["escalated_to"] == {"id": owner.user.pk, "name": owner.user.email}
    owner_client.post(f"{url}/release", {}, format="json")
    assert api_a.get(url).json()["escalated_to"]["id"] == owner.user.pk  # kept for history
    # Another member takes it over (an API key names them): it went to them now.
    api_a.post(f"{url}/claim", {"staff_email": member.user.email}, format="json")
    listed = api_a.get("/api/v1/conversations").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [r["escalated_to"]["id"] for r in rows] == [member.user.pk]


@pytest.mark.django_db
def test_staff_write_the_rating_and_comment_and_the_api_shows_them(
    member_client: Any, member: Persona, api_a: Any
) -> None:
    conversation = conversation_make(agent_for(member.tenant), status="active")

    saved = _feedback(member_client, conversation, {"rating": 4, "text": " Muy amables. "})

    assert saved.status_code == 200, saved.content
    assert (saved.json()["satisfaction_rating"], saved.json()["feedback_text"]) == (
        4,
        "Muy amables.",
    )
    # One field alone keeps the other; null clears the rating.
    assert _feedback(api_a, conversation, {"rating": 5}).json()["feedback_text"] == "Muy amables."
    detail = api_a.get(f"/api/v1/conversations/{conversation.pk}").json()
    assert (detail["satisfaction_rating"], detail["feedback_text"]) == (5, "Muy amables.")
    assert _feedback(api_a, conversation, {"rating": None}).json()["satisfaction_rating"] is None
    handoff.conversation_close(fresh(conversation), member.user)
    assert _feedback(member_client, conversation, {"rating": 2}).status_code == 200  # closed too


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        {"rating": 0},
        {"rating": 6},
        {"rating": "cinco"},
        {"rating": True},
        {"rating": 3.5},
        {"text": 42},
        {"text": "x" * 2001},
        {},
        ["rating", 5],
        "5",
    ],
)
def test_bad_feedback_is_a_400_json_error_and_changes_nothing(
    api_a: Any, owner: Persona, body: Any
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))

    response = _feedback(api_a, conversation, body)

    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"]
    row = fresh(conversation)
    assert (row.satisfaction_rating, row.feedback_text) == (None, "")


@pytest.mark.django_db
def test_nobody_writes_feedback_on_another_tenants_conversation(
    api_b: Any, outsider_client: Any, owner: Persona, outsider: Persona
) -> None:
    ours = conversation_make(agent_for(owner.tenant))
    # A person in both tenants acts in the tenant they name.
    MembershipFactory(tenant=owner.tenant, user=outsider.user, role=Membership.Role.AGENT)
    in_b = APIClient()
    in_b.force_login(outsider.user)
    in_b.defaults["HTTP_X_TENANT"] = outsider.tenant.slug

    assert _feedback(api_b, ours, {"rating": 1}).status_code == 404
    assert _feedback(in_b, ours, {"rating": 1}).status_code == 404
    assert fresh(ours).satisfaction_rating is None
    in_b.defaults["HTTP_X_TENANT"] = owner.tenant.slug
    assert _feedback(in_b, ours, {"rating": 3}).status_code == 200
    assert fresh(ours).satisfaction_rating == 3
    missing = "/api/v1/conversations/not-a-uuid/feedback"
    assert api_b.post(missing, {"rating": 1}, format="json").status_code == 404
