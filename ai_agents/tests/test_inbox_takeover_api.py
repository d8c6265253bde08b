"""POST /api/v1/conversations/{id}/takeover: an owner/admin of the conversation's tenant takes
it from the colleague who holds it. Rights per object (the member's role in the conversation's
own tenant; a user in two tenants with two roles), 403 in words for agents, 404 for another
tenant's conversation; the previous holder's page state loses the reply box; a note records it.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from ai_agents.models import ConversationNote
from ai_agents.tests.handoff_helpers import agent_for, conversation_make, fresh
from erp.tenancy.models import Membership, Tenant
from erp.testing import deadlines
from erp.testing.factories import MembershipFactory, UserFactory
from erp.testing.fixtures import Persona, session_client_for

URL = "/api/v1/conversations"
TAKERS = 4


def _name(user: Any) -> str:
    return str(user.get_full_name() or user.email)


@pytest.fixture
def mixed(tenant_a: Tenant, tenant_b: Tenant) -> Any:
    """A user who is an agent in tenant A and the owner of tenant B."""
    user: Any = UserFactory(username="mixed@x.test")
    MembershipFactory.create(tenant=tenant_a, user=user, role=Membership.Role.AGENT)
    MembershipFactory.create(tenant=tenant_b, user=user, role=Membership.Role.OWNER)
    client = APIClient()
    client.force_login(user)
    client.user = user  # type: ignore[attr-defined]  # for the assertions
    return client


@pytest.mark.django_db
def test_owner_takes_over_from_the_agent_who_then_cannot_reply(
    owner_client: Any, member_client: Any, owner: Persona, member: Persona, conv_a: Any
) -> None:
    assert member_client.post(f"{URL}/{conv_a.pk}/claim", {}, format="json").status_code == 200
    # a claim cannot take it while the agent's lease runs; a take-over can
    assert owner_client.post(f"{URL}/{conv_a.pk}/claim", {}, format="json").status_code == 409
    before = owner_client.get(f"/inbox/{conv_a.pk}/events").json()["state"]
    assert before["can_take_over"] is True and before["can_reply"] is False
    assert member_client.get(f"/inbox/{conv_a.pk}/events").json()["state"]["can_take_over"] is False

    response = owner_client.post(f"{URL}/{conv_a.pk}/takeover", {}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["assigned_to"]["email"] == owner.user.email and body["claimed"] is True
    assert fresh(conv_a).assigned_to_id == owner.user.pk
    note = ConversationNote.objects.for_tenant(conv_a.tenant_id).get()
    assert note.text == f"{_name(owner.user)} tomó el control (antes: {_name(member.user)})"
    assert note.author_id == owner.user.pk
    # the agent's page: held by the owner, no reply box; their reply is refused
    lost = member_client.get(f"/inbox/{conv_a.pk}/events").json()["state"]
    assert lost["holder"] == _name(owner.user) and lost["holder_is_me"] is False
    assert lost["can_reply"] is False and lost["can_claim"] is False
    assert any(
        n["text"] == note.text
        for n in member_client.get(f"/inbox/{conv_a.pk}/events").json()["notes"]
    )
    refused = member_client.post(f"{URL}/{conv_a.pk}/reply", {"text": "hola"}, format="json")
    assert refused.status_code == 403
    ok = owner_client.post(f"{URL}/{conv_a.pk}/reply", {"text": "Le atiendo yo"}, format="json")
    assert ok.status_code == 200
    mine = owner_client.get(f"/inbox/{conv_a.pk}/events").json()["state"]
    assert mine["can_take_over"] is False and mine["can_reply"] is True


@pytest.mark.django_db
def test_an_agent_cannot_take_over_and_other_tenants_are_404(
    owner_client: Any, member_client: Any, owner: Persona, conv_a: Any, conv_b: Any
) -> None:
    assert owner_client.post(f"{URL}/{conv_a.pk}/claim", {}, format="json").status_code == 200
    refused = member_client.post(f"{URL}/{conv_a.pk}/takeover", {}, format="json")
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "not_allowed"
    assert error["message"] == (
        "Solo el propietario o un administrador de la empresa puede tomar el control."
    )
    assert fresh(conv_a).assigned_to_id == owner.user.pk
    assert ConversationNote.objects.for_tenant(conv_a.tenant_id).count() == 0
    # another tenant's conversation: not found (its owner's rights are no rights here)
    assert owner_client.post(f"{URL}/{conv_b.pk}/takeover", {}, format="json").status_code == 404
    english = member_client.post(
        f"{URL}/{conv_a.pk}/takeover", {}, format="json", HTTP_ACCEPT_LANGUAGE="en"
    )
    assert english.status_code == 403
    assert "owner or an administrator" in english.json()["error"]["message"]


@pytest.mark.django_db
def test_a_user_in_two_tenants_has_the_role_of_each_conversations_tenant(
    mixed: Any, member: Persona, outsider: Persona, conv_a: Any, conv_b: Any
) -> None:
    session_client_for(member).post(f"{URL}/{conv_a.pk}/claim", {}, format="json")
    session_client_for(outsider).post(f"{URL}/{conv_b.pk}/claim", {}, format="json")

    in_a = mixed.post(f"{URL}/{conv_a.pk}/takeover", {}, format="json", HTTP_X_TENANT="acme")
    assert in_a.status_code == 403  # an agent in tenant A
    assert fresh(conv_a).assigned_to_id == member.user.pk
    events_a = mixed.get(f"/inbox/{conv_a.pk}/events").json()["state"]
    assert events_a["can_take_over"] is False
    events_b = mixed.get(f"/inbox/{conv_b.pk}/events").json()["state"]
    assert events_b["can_take_over"] is True

    in_b = mixed.post(f"{URL}/{conv_b.pk}/takeover", {}, format="json", HTTP_X_TENANT="globex")
    assert in_b.status_code == 200, in_b.content  # the owner of tenant B
    assert fresh(conv_b).assigned_to_id == mixed.user.pk
    # narrowed to tenant A, tenant B's conversation is not found
    narrowed = mixed.post(f"{URL}/{conv_b.pk}/takeover", {}, format="json", HTTP_X_TENANT="acme")
    assert narrowed.status_code == 404


@pytest.mark.django_db
def test_api_key_names_the_member_and_free_or_closed_conversations(
    api_a: Any, owner: Persona, member: Persona, member_client: Any, conv_a: Any
) -> None:
    # free: a take-over is a plain claim (no note: nobody lost it)
    free = api_a.post(
        f"{URL}/{conv_a.pk}/takeover", {"staff_email": owner.user.email}, format="json"
    )
    assert free.status_code == 200 and free.json()["assigned_to"]["email"] == owner.user.email
    assert ConversationNote.objects.for_tenant(conv_a.tenant_id).count() == 0
    agent = api_a.post(
        f"{URL}/{conv_a.pk}/takeover", {"staff_email": member.user.email}, format="json"
    )
    assert agent.status_code == 403
    assert api_a.post(f"{URL}/{conv_a.pk}/takeover", {}, format="json").status_code == 400
    closed = conversation_make(agent_for(owner.tenant, "Otra"), thread="c1", status="closed")
    gone = api_a.post(
        f"{URL}/{closed.pk}/takeover", {"staff_email": owner.user.email}, format="json"
    )
    assert gone.status_code == 409 and gone.json()["error"]["code"] == "conversation_closed"


@pytest.mark.django_db
def test_the_button_shows_only_to_owner_or_admin_while_a_colleague_holds_it(
    owner_client: Any, member_client: Any, tenant_a: Tenant, conv_a: Any
) -> None:
    admin: Any = UserFactory(username="admin@acme.test")
    MembershipFactory.create(tenant=tenant_a, user=admin, role=Membership.Role.ADMIN)
    admin_client = APIClient()
    admin_client.force_login(admin)
    page = owner_client.get(f"/inbox/{conv_a.pk}").content.decode()
    assert 'id="inbox-takeover" data-action="takeover" aria-haspopup="dialog" hidden' in page
    member_client.post(f"{URL}/{conv_a.pk}/claim", {}, format="json")
    for client, shown in ((owner_client, True), (admin_client, True), (member_client, False)):
        html = client.get(f"/inbox/{conv_a.pk}").content.decode()
        hidden = 'aria-haspopup="dialog" hidden>Tomar el control' in html
        assert hidden is not shown
        # the dialog and the locked box name the holder
        assert "agent@acme.test dejará de poder responder; la conversación pasa a usted." in html
        if shown:
            assert "La atiende agent@acme.test: deje una nota interna o tome el control." in html
    # the admin takes it from the agent, then the owner from the admin
    assert admin_client.post(f"{URL}/{conv_a.pk}/takeover", {}, format="json").status_code == 200
    assert owner_client.post(f"{URL}/{conv_a.pk}/takeover", {}, format="json").status_code == 200
    texts = list(
        ConversationNote.objects.for_tenant(conv_a.tenant_id)
        .order_by("created_at")
        .values_list("text", flat=True)
    )
    assert [t.split(" (antes: ")[1] for t in texts] == ["agent@acme.test)", "admin@acme.test)"]


@pytest.mark.django_db(transaction=True)
def test_take_overs_at_once_follow_one_another(
    owner: Persona, member: Persona, tenant_a: Tenant
) -> None:
    """The row lock: each take-over sees the previous one's result, so the notes form one
    chain (each names the real previous holder: the agent, then each taker in turn) and the
    last taker holds it. Without the lock two of them name the same previous holder."""
    conversation = conversation_make(agent_for(tenant_a), thread="race")
    session_client_for(member).post(f"{URL}/{conversation.pk}/claim", {}, format="json")
    takers: list[Any] = [owner.user]
    for n in range(TAKERS - 1):
        admin: Any = UserFactory(username=f"admin{n}@acme.test")
        MembershipFactory.create(tenant=tenant_a, user=admin, role=Membership.Role.ADMIN)
        takers.append(admin)
    clients = []
    for user in takers:
        client = APIClient()
        client.force_login(user)
        clients.append(client)
    codes: list[int] = []
    barrier = deadlines.barrier(len(clients))

    def take(client: APIClient) -> None:
        barrier.wait()
        try:
            answer = client.post(f"{URL}/{conversation.pk}/takeover", {}, format="json")
            codes.append(answer.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=take, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)

    assert codes == [200] * TAKERS
    notes = list(
        ConversationNote.objects.for_tenant(tenant_a.pk)
        .order_by("created_at")
        .values_list("author_id", "text")
    )
    names = {user.pk: _name(user) for user in takers}
    previous = [_name(member.user)] + [names[author] for author, _text in notes[:-1]]
    assert [text.split(" (antes: ")[1] for _author, text in notes] == [f"{p})" for p in previous]
    assert fresh(conversation).assigned_to_id == notes[-1][0]


@pytest.mark.django_db
def test_a_colleague_claiming_between_the_check_and_the_claim_is_taken_over(
    owner: Persona, member: Persona, conv_a: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conversation is free when the take-over looks, a colleague claims it the next
    moment: the owner's claim meets the colleague's lease, and the take-over moves it."""
    from ai_agents.services import handoff, handoff_takeover

    real_claim = handoff.conversation_claim
    raced: list[int] = []

    def colleague_first(conversation: Any, user: Any) -> Any:
        if not raced:
            raced.append(1)
            real_claim(conversation, member.user)
        return real_claim(conversation, user)

    monkeypatch.setattr(handoff, "conversation_claim", colleague_first)

    taken = handoff_takeover.conversation_takeover(fresh(conv_a), owner.user)

    assert raced and taken.assigned_to_id == owner.user.pk
    note = ConversationNote.objects.for_tenant(conv_a.tenant_id).get()
    assert note.text == f"{_name(owner.user)} tomó el control (antes: {_name(member.user)})"
