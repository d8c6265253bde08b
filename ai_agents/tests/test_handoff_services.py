# ruff: noqa: F811  (the adapter fixture comes from handoff_helpers)
"""Human handoff services: claim (a lease), reply on the channel, release to the bot, close;
races between two people; the bot's silence while a person holds the conversation."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from ai_agents.conversations.inbound import Inbound, inbound_accept
from ai_agents.models import Conversation, HandoffSettings, Message
from ai_agents.services import handoff
from ai_agents.tests.handoff_helpers import (  # noqa: F401  (fixture)
    CHANNEL,
    RecordingAdapter,
    adapter,
    agent_for,
    binding_for,
    conversation_make,
    fresh,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing import deadlines
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona


@pytest.mark.django_db
def test_claim_takes_an_escalated_conversation_for_the_default_lease(owner: Persona) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    before = timezone.now()

    claimed = handoff.conversation_claim(conversation, owner.user)

    assert claimed.assigned_to_id == owner.user.pk
    assert claimed.status == "escalated"
    assert claimed.escalation_reason == "user_request"  # kept
    assert claimed.claim_expires_at is not None
    lease = claimed.claim_expires_at - before
    assert timedelta(minutes=14, seconds=59) < lease < timedelta(minutes=15, seconds=5)
    holder = handoff.conversation_holder(claimed)
    assert holder is not None and holder.name == owner.user.email


@pytest.mark.django_db
def test_claim_uses_the_tenants_lease_and_takes_over_from_the_bot(owner: Persona) -> None:
    HandoffSettings.objects.for_tenant(owner.tenant).create(
        tenant=owner.tenant, claim_lease_minutes=40
    )
    conversation = conversation_make(agent_for(owner.tenant), status="active")

    claimed = handoff.conversation_claim(conversation, owner.user)

    assert claimed.status == "escalated"
    assert claimed.escalation_reason == handoff.TAKEOVER_REASON
    assert claimed.escalated_at is not None
    assert claimed.claim_expires_at is not None
    assert claimed.claim_expires_at - timezone.now() > timedelta(minutes=39)


@pytest.mark.django_db
def test_a_valid_claim_of_someone_else_is_a_conflict_and_an_expired_one_is_taken_over(
    owner: Persona, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, owner.user)

    with pytest.raises(handoff.ConversationClaimed) as conflict:
        handoff.conversation_claim(conversation, member.user)
    assert conflict.value.extra["assigned_to"] == {"id": owner.user.pk, "name": owner.user.email}
    assert conflict.value.extra["claim_expires_at"] is not None
    assert fresh(conversation).assigned_to_id == owner.user.pk

    # The owner went away: the lease ran out. The conversation shows as unclaimed, stays
    # escalated, and someone else may take it.
    with tenant_scope(owner.tenant):
        Conversation.objects.filter(pk=conversation.pk).update(
            claim_expires_at=timezone.now() - timedelta(seconds=1)
        )
    expired = fresh(conversation)
    assert handoff.conversation_holder(expired) is None
    assert expired.status == "escalated"
    assert [c.pk for c in handoff.inbox_conversations([owner.tenant.pk])] == [conversation.pk]

    taken = handoff.conversation_claim(conversation, member.user)
    assert taken.assigned_to_id == member.user.pk
    with pytest.raises(handoff.NotHolder):
        handoff.conversation_reply(conversation, owner.user, "¿Sigue ahí?")


@pytest.mark.django_db
def test_closed_conversations_cannot_be_claimed_replied_released_or_closed(
    owner: Persona,
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, owner.user)
    closed = handoff.conversation_close(conversation, owner.user)
    assert closed.status == "closed" and closed.closed_at is not None
    assert closed.claim_expires_at is None

    for action in (
        lambda: handoff.conversation_claim(conversation, owner.user),
        lambda: handoff.conversation_reply(conversation, owner.user, "hola"),
        lambda: handoff.conversation_release(conversation, owner.user),
        lambda: handoff.conversation_close(conversation, owner.user),
    ):
        with pytest.raises(handoff.ConversationClosed):
            action()


@pytest.mark.django_db
def test_reply_is_stored_as_the_persons_message_and_renews_the_lease(owner: Persona) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, owner.user)
    with tenant_scope(owner.tenant):
        Conversation.objects.filter(pk=conversation.pk).update(
            claim_expires_at=timezone.now() + timedelta(minutes=1)
        )

    message = handoff.conversation_reply(conversation, owner.user, "  Hola, soy Ana.  ")

    assert message.role == "assistant"
    assert message.author_id == owner.user.pk
    assert message.content == "Hola, soy Ana."
    assert message.metadata == {"human": True}
    after = fresh(conversation)
    assert after.claim_expires_at is not None
    assert after.claim_expires_at - timezone.now() > timedelta(minutes=14)
    assert after.message_count == 1  # the helper's rows were inserted without counting


@pytest.mark.django_db
def test_reply_needs_the_holder_and_sensible_text(owner: Persona, member: Persona) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    with pytest.raises(handoff.NotHolder):
        handoff.conversation_reply(conversation, owner.user, "hola")  # nobody claimed it
    handoff.conversation_claim(conversation, owner.user)
    with pytest.raises(handoff.NotHolder):
        handoff.conversation_reply(conversation, member.user, "hola")
    for bad in ("", "   ", "x" * (handoff.REPLY_MAX_CHARS + 1), None):
        with pytest.raises(handoff.InvalidReply):
            handoff.conversation_reply(conversation, owner.user, bad)
    with tenant_scope(owner.tenant):
        assert not Message.objects.filter(author__isnull=False).exists()


@pytest.mark.django_db
def test_a_reply_on_a_pushing_channel_goes_out_through_its_adapter(
    owner: Persona, adapter: RecordingAdapter, run_tasks: Any
) -> None:
    agent = agent_for(owner.tenant)
    conversation = conversation_make(agent, channel=CHANNEL, binding=binding_for(agent))
    handoff.conversation_claim(conversation, owner.user)

    with run_tasks():
        message = handoff.conversation_reply(conversation, owner.user, "Le ayudo yo.")

    assert adapter.sent == ["Le ayudo yo."]
    with tenant_scope(owner.tenant):
        assert Message.objects.get(pk=message.pk).delivery_status == "sent"


@pytest.mark.django_db
def test_a_reply_on_a_pulled_channel_is_only_stored(owner: Persona, run_tasks: Any) -> None:
    conversation = conversation_make(agent_for(owner.tenant), channel="webchat")
    handoff.conversation_claim(conversation, owner.user)
    with run_tasks():
        message = handoff.conversation_reply(conversation, owner.user, "Le ayudo yo.")
    with tenant_scope(owner.tenant):
        assert Message.objects.get(pk=message.pk).delivery_status == ""


@pytest.mark.django_db
def test_release_hands_back_to_the_bot_keeping_the_escalation_history(
    owner: Persona, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, owner.user)
    with pytest.raises(handoff.NotHolder):
        handoff.conversation_release(conversation, member.user)
    with pytest.raises(handoff.NotHolder):
        handoff.conversation_close(conversation, member.user)

    released = handoff.conversation_release(conversation, owner.user)

    assert released.status == "active"
    assert released.assigned_to_id is None and released.claim_expires_at is None
    assert released.escalation_reason == "user_request"
    assert released.escalation_priority == "high"
    assert released.escalated_at is not None


@pytest.mark.django_db
def test_an_unclaimed_escalated_conversation_may_be_released_or_closed_by_any_member(
    owner: Persona, member: Persona
) -> None:
    first = conversation_make(agent_for(owner.tenant), thread="t-1")
    second = conversation_make(first.agent, thread="t-2")
    assert handoff.conversation_release(first, member.user).status == "active"
    assert handoff.conversation_close(second, member.user).status == "closed"


def _claim_race(conversation: Conversation, users: list[Any]) -> list[str]:
    barrier = deadlines.barrier(len(users))
    outcomes: list[str] = []
    lock = threading.Lock()

    def attempt(user: Any) -> None:
        try:
            barrier.wait()
            handoff.conversation_claim(conversation, user)
            outcome = f"won:{user.pk}"
        except handoff.ConversationClaimed:
            outcome = "conflict"
        finally:
            connection.close()
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=attempt, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    deadlines.threads_join(threads)
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_two_people_claiming_at_once_exactly_one_wins(owner: Persona, member: Persona) -> None:
    agent = agent_for(owner.tenant)
    for round_ in range(5):
        conversation = conversation_make(agent, thread=f"race-{round_}")
        outcomes = _claim_race(conversation, [owner.user, member.user])
        winners = [o for o in outcomes if o.startswith("won:")]
        assert len(winners) == 1 and outcomes.count("conflict") == 1, outcomes
        assert f"won:{fresh(conversation).assigned_to_id}" == winners[0]


def _inbound(text: str, message_id: str) -> Inbound:
    return Inbound(
        text=text, contact={"external_id": "cli-9"}, channel=CHANNEL, channel_message_id=message_id
    )


@pytest.mark.django_db
def test_no_model_call_while_claimed_and_the_bot_answers_again_after_release(
    owner: Persona, adapter: RecordingAdapter, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    agent = agent_for(owner.tenant)
    binding = binding_for(agent)
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Hola, soy el bot."}))
    with run_tasks():
        first, _ = inbound_accept(binding=binding, inbound=_inbound("hola", "m-1"))
    assert adapter.sent == ["Hola, soy el bot."]
    conversation = fresh(first.conversation)

    handoff.conversation_claim(conversation, owner.user)  # proactive takeover
    with run_tasks():
        inbound_accept(binding=binding, inbound=_inbound("¿me oye alguien?", "m-2"))
        handoff.conversation_reply(conversation, owner.user, "Sí, soy Ana.")
    assert len(fake_google.generate_requests) == 1  # no model call while a person holds it
    assert adapter.sent == ["Hola, soy el bot.", "Sí, soy Ana."]

    handoff.conversation_release(conversation, owner.user)
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "De vuelta."}))
    with run_tasks():
        inbound_accept(binding=binding, inbound=_inbound("gracias", "m-3"))
    assert adapter.sent[-1] == "De vuelta."
    assert len(fake_google.generate_requests) == 2
    # The person's reply is part of the history the bot sees.
    assert "Sí, soy Ana." in str(fake_google.generate_requests[1]["contents"])


@pytest.mark.django_db
def test_opening_the_conversation_renews_only_the_holders_lease(
    owner: Persona, member: Persona
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    handoff.conversation_claim(conversation, owner.user)
    soon = timezone.now() + timedelta(minutes=1)
    with tenant_scope(owner.tenant):
        Conversation.objects.filter(pk=conversation.pk).update(claim_expires_at=soon)

    assert not handoff.conversation_lease_renew(conversation, member.user)
    assert fresh(conversation).claim_expires_at == soon
    assert handoff.conversation_lease_renew(conversation, owner.user)
    renewed = fresh(conversation).claim_expires_at
    assert renewed is not None and renewed > soon + timedelta(minutes=10)


@pytest.mark.django_db
def test_waiting_since_is_the_escalation_then_the_first_message_after_the_teams_reply(
    owner: Persona,
) -> None:
    conversation = conversation_make(agent_for(owner.tenant))
    assert handoff.conversation_waiting_since(fresh(conversation)) == conversation.escalated_at

    handoff.conversation_claim(conversation, owner.user)
    handoff.conversation_reply(conversation, owner.user, "Dígame.")
    assert handoff.conversation_waiting_since(fresh(conversation)) is None

    later = timezone.now() + timedelta(seconds=1)
    with tenant_scope(owner.tenant):
        Message.objects.create(
            tenant=owner.tenant,
            conversation=conversation,
            agent=conversation.agent,
            role="user",
            content="Mi pedido no llegó",
            created_at=later,
        )
    assert handoff.conversation_waiting_since(fresh(conversation)) == later


@pytest.mark.django_db
def test_the_inbox_lists_only_the_given_tenants_escalated_conversations_most_urgent_first(
    owner: Persona, outsider: Persona
) -> None:
    agent = agent_for(owner.tenant)
    medium = conversation_make(agent, thread="m", priority="medium", escalated_minutes_ago=50)
    urgent = conversation_make(agent, thread="u", priority="urgent", escalated_minutes_ago=1)
    old_high = conversation_make(agent, thread="h1", priority="high", escalated_minutes_ago=30)
    new_high = conversation_make(agent, thread="h2", priority="high", escalated_minutes_ago=2)
    conversation_make(agent, thread="a", status="active")
    conversation_make(agent_for(outsider.tenant), thread="b")

    listed = [c.pk for c in handoff.inbox_conversations([owner.tenant.pk])]

    assert listed == [urgent.pk, old_high.pk, new_high.pk, medium.pk]
