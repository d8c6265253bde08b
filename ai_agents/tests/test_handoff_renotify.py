"""RN-7 after an escalation: an escalated conversation nobody answers is brought back to its
own tenant's team every `renotify_minutes` (default 30), at most three times, the last one
saying so; a claim or a staff reply stops the reminders; two beat workers send one."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from ai_agents import tasks
from ai_agents.models import Conversation, HandoffSettings, Message
from ai_agents.services import handoff, handoff_renotify
from ai_agents.services.handoff_renotify import renotify_due
from ai_agents.tests.handoff_helpers import agent_for, conversation_make, fresh
from erp.testing.fake_http import FakeResponse, FakeServer
from erp.testing.fixtures import Persona


@pytest.fixture
def eager(run_tasks: Any) -> None:
    """The notice task runs in-process (Celery eager), as a worker would run it."""


def _sent(since: int = 0) -> list[tuple[list[str], str, str]]:
    return [(sorted(m.to), str(m.subject), str(m.body)) for m in mail.outbox[since:]]


def _at(start: datetime, minutes: int) -> datetime:
    return start + timedelta(minutes=minutes)


@pytest.mark.django_db
def test_an_escalation_nobody_answers_is_renotified_to_its_own_team_three_times(
    owner: Persona, outsider: Persona, eager: None
) -> None:
    conversation_a = conversation_make(agent_for(owner.tenant), escalated_minutes_ago=5)
    conversation_b = conversation_make(agent_for(outsider.tenant), escalated_minutes_ago=5)
    HandoffSettings.objects.for_tenant(outsider.tenant).create(
        tenant=outsider.tenant, renotify_minutes=60
    )
    start = timezone.now()

    assert renotify_due(now=start) == 0  # 5 minutes: too early for both
    assert renotify_due(now=_at(start, 26)) == 1  # A waits 31 min (30); B 31 (60)
    [(to, subject, body)] = _sent()
    assert to == [owner.user.email]
    assert subject == "[Acme] Un cliente sigue esperando a una persona"
    assert "Recordatorio 1 de 3" in body and "desde hace 31 minutos" in body
    assert f"/inbox/{conversation_a.pk}" in body
    assert renotify_due(now=_at(start, 40)) == 0  # at most once per period

    assert renotify_due(now=_at(start, 56)) == 2  # A's second; B's first (61 min)
    by_team = {tuple(to): body for to, _subject, body in _sent(1)}
    assert "Recordatorio 2 de 3" in by_team[(owner.user.email,)]
    assert "Recordatorio 1 de 3" in by_team[(outsider.user.email,)]
    assert f"/inbox/{conversation_b.pk}" in by_team[(outsider.user.email,)]

    assert renotify_due(now=_at(start, 86)) == 1  # A's third and last
    [(to, _subject, body)] = _sent(3)
    assert to == [owner.user.email]
    assert "Recordatorio 3 de 3" in body and "Es el último recordatorio" in body
    assert renotify_due(now=_at(start, 200)) == 1  # B's second; A: no more
    assert [to for to, _s, _b in _sent(4)] == [[outsider.user.email]]
    assert (fresh(conversation_a).renotify_count, fresh(conversation_b).renotify_count) == (3, 2)


@pytest.mark.django_db
def test_a_claim_stops_the_reminders_and_a_lapsed_claim_without_a_reply_does_not(
    owner: Persona, eager: None
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), escalated_minutes_ago=40)
    handoff.conversation_claim(conversation, owner.user)  # a 15-minute lease

    assert renotify_due() == 0
    assert mail.outbox == []
    # The lease ran out and nobody wrote to the customer: still unanswered.
    Conversation.objects.for_tenant(owner.tenant).filter(pk=conversation.pk).update(
        claim_expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert renotify_due() == 1
    assert "Recordatorio 1 de 3" in mail.outbox[0].body


@pytest.mark.django_db
def test_a_staff_reply_stops_the_reminders_until_the_customer_waits_again(
    owner: Persona, eager: None
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), escalated_minutes_ago=90)
    handoff.conversation_claim(conversation, owner.user)
    handoff.conversation_reply(conversation, owner.user, "Hola, soy Ana. ¿En qué le ayudo?")
    Conversation.objects.for_tenant(owner.tenant).filter(pk=conversation.pk).update(
        claim_expires_at=timezone.now() - timedelta(minutes=1)
    )
    later = timezone.now() + timedelta(hours=2)

    assert renotify_due(now=later) == 0  # answered: nobody waits
    Message.objects.for_tenant(owner.tenant).create(
        tenant_id=owner.tenant.pk,
        conversation=conversation,
        agent_id=conversation.agent_id,
        role="user",
        content="¿Sigue ahí?",
        metadata={"result": {}},
        created_at=timezone.now(),
    )
    assert renotify_due(now=_at(later, -100)) == 0  # the new wait is too recent
    assert renotify_due(now=later) == 1
    assert "Recordatorio 1 de 3" in mail.outbox[0].body


@pytest.mark.django_db
def test_zero_minutes_means_never_and_active_conversations_are_never_reminded(
    owner: Persona, outsider: Persona, eager: None
) -> None:
    HandoffSettings.objects.for_tenant(owner.tenant).create(tenant=owner.tenant, renotify_minutes=0)
    conversation_make(agent_for(owner.tenant), escalated_minutes_ago=600)
    conversation_make(agent_for(outsider.tenant), status="active", escalated_minutes_ago=600)

    assert renotify_due(now=timezone.now() + timedelta(days=1)) == 0
    assert mail.outbox == []


@pytest.mark.django_db
def test_two_beat_workers_reading_the_same_rows_send_one_reminder(
    owner: Persona, eager: None
) -> None:
    conversation = conversation_make(agent_for(owner.tenant), escalated_minutes_ago=45)
    now = timezone.now()
    first = handoff_renotify._candidates(now)
    second = handoff_renotify._candidates(now)  # the other worker read the same row
    [mine], [theirs] = first, second
    number = handoff_renotify.reminder_number(mine, now, 30)

    assert number == handoff_renotify.reminder_number(theirs, now, 30) == 1
    assert handoff_renotify._claim(mine, number, now) is True
    assert handoff_renotify._claim(theirs, number, now) is False
    assert renotify_due(now=now) == 0  # and the next run sees it sent
    assert fresh(conversation).renotify_count == 1


@pytest.mark.django_db
def test_the_beat_task_sends_the_reminder_to_the_webhook_as_a_waiting_event(
    owner: Persona, eager: None, settings: Any
) -> None:
    settings.HTTP_ALLOW_PRIVATE_NETWORKS = True  # the fake receiver lives on loopback
    with FakeServer() as receiver:
        receiver.route("POST", r"/hooks/erp", FakeResponse.json({"ok": True}))
        HandoffSettings.objects.for_tenant(owner.tenant).create(
            tenant=owner.tenant, webhook_url=f"{receiver.url}/hooks/erp"
        )
        conversation = conversation_make(agent_for(owner.tenant), escalated_minutes_ago=31)

        assert tasks.bulk_renotify_escalations.apply().get(timeout=30) == 1

    [request] = receiver.requests
    body = json.loads(request.body)
    assert (body["event"], body["conversation_id"]) == (
        "conversation.waiting",
        str(conversation.pk),
    )
    assert body["text"].startswith("Recordatorio 1 de 3")
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_an_english_speaking_team_is_reminded_in_english(outsider: Persona, eager: None) -> None:
    outsider.tenant.language = "en"
    outsider.tenant.save(update_fields=["language"])
    conversation_make(agent_for(outsider.tenant), escalated_minutes_ago=200)
    HandoffSettings.objects.for_tenant(outsider.tenant).create(
        tenant=outsider.tenant, renotify_minutes=60
    )

    assert renotify_due() == 1
    [(to, subject, body)] = _sent()
    assert (to, subject) == (
        [outsider.user.email],
        "[Globex] A customer is still waiting for a person",
    )
    assert "Reminder 1 of 3: the customer has been waiting for a person for 200 minutes" in body
