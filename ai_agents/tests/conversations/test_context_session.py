"""What the model is told of the conversation itself (the spec's context): `session.id`,
`session.started_at`, `session.previous_intents` (in order) and each history turn's time in the
tenant's time zone, checked in the requests the fake Gemini server received."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from ai_agents.conversations.context import Session, context_block
from ai_agents.models import Conversation, Message
from ai_agents.rules.prompt import format_spanish_datetime
from ai_agents.tests.conversations.support import create_agent, push_answer, send_message
from erp.tenancy import rows
from erp.tenancy.models import Tenant
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_google import FakeGoogle

INTENTS_LINE = "- Intenciones detectadas antes en esta conversación (en orden): "


def _system(request: dict[str, Any]) -> str:
    return str(request["systemInstruction"]["parts"][0]["text"])


def _texts(request: dict[str, Any]) -> list[str]:
    return [p["text"] for c in request["contents"] for p in c["parts"]]


@pytest.mark.django_db
def test_the_model_gets_the_session_id_start_and_the_previous_intents_in_order(
    api_a: Any, api_b: Any, tenant_a: Tenant, tenant_b: Tenant, fake_google: FakeGoogle
) -> None:
    agent_a, agent_b = create_agent(api_a), create_agent(api_b)
    push_answer(fake_google, "Hola, Ana.", intent="saludo")
    first = send_message(api_a, agent_a, "Hola").json()
    push_answer(fake_google, "Lo siento.", intent="queja")  # the other tenant's conversation
    send_message(api_b, agent_b, "Esto es un desastre").json()
    push_answer(fake_google, "Sale hoy.", intent="estado_pedido")
    send_message(api_a, agent_a, "¿Dónde está mi pedido A-17?")
    push_answer(fake_google, "De nada.", intent="estado_pedido")
    send_message(api_a, agent_a, "¿Y el A-18?")
    push_answer(fake_google, "Gracias a usted.")
    send_message(api_a, agent_a, "Gracias")

    requests = [_system(r) for r in fake_google.generate_requests]
    with tenant_scope(tenant_a):
        conversation = Conversation.objects.get(pk=first["conversation_id"])
    session_line = f"- Conversación: {conversation.pk}, iniciada el "
    assert session_line in requests[0] and INTENTS_LINE not in requests[0]  # nothing yet
    started = timezone.localtime(conversation.started_at, ZoneInfo(tenant_a.timezone))
    assert f"{session_line}{format_spanish_datetime(started)}\n" in requests[0]
    assert INTENTS_LINE + "saludo\n" in requests[2] + "\n"
    # the default agent's keywords found "order_status" in the 2nd message (hybrid mode: the
    # keyword wins over the model's "estado_pedido"); the 3rd is the model's
    assert INTENTS_LINE + "saludo, order_status, estado_pedido\n" in requests[4]
    # tenant B's conversation knows only its own intents
    assert "queja" not in requests[4] and "saludo" not in requests[1]
    assert str(conversation.pk) not in requests[1]


@pytest.mark.django_db
def test_each_earlier_turn_reaches_the_model_after_its_time_in_the_tenants_zone(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    Tenant.objects.filter(pk=tenant_a.pk).update(timezone="America/Mexico_City")  # UTC-6
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Hola, ¿en qué le ayudo?")
    conversation_id = send_message(api_a, agent_id, "Hola").json()["conversation_id"]
    sent = datetime(2026, 3, 1, 10, 5, tzinfo=UTC)
    with tenant_scope(tenant_a):
        question, answer = Message.objects.filter(conversation_id=conversation_id).order_by(
            "created_at"
        )
        Message.objects.filter(pk=question.pk).update(created_at=sent)
        Message.objects.filter(pk=answer.pk).update(created_at=sent + timedelta(minutes=1))
    push_answer(fake_google, "Claro.")

    send_message(api_a, agent_id, "¿Abren mañana?")

    request = fake_google.generate_requests[-1]
    assert _texts(request) == [
        "[2026-03-01 04:05] Hola",
        "[2026-03-01 04:06] Hola, ¿en qué le ayudo?",
        "¿Abren mañana?",  # the message being answered: its time is the context's "now"
    ]
    assert "empiezan con su fecha y hora local [AAAA-MM-DD HH:MM]" in _system(request)
    first_request = fake_google.generate_requests[0]
    assert _texts(first_request) == ["Hola"]
    assert "AAAA-MM-DD" not in _system(first_request)  # no history, no note


@pytest.mark.django_db
def test_the_intents_are_read_in_the_turns_one_round_trip(
    api_a: Any, fake_google: FakeGoogle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The intents come with the turn, the pending message and the history (`turn_next`):
    no round trip of their own."""
    agent_id = create_agent(api_a)
    push_answer(fake_google, "Hola.", intent="saludo")
    send_message(api_a, agent_id, "Hola")
    round_trips: list[str] = []
    real = rows.run_together

    def counting(statements: Any, *args: Any, **kwargs: Any) -> Any:
        round_trips.append(" | ".join(str(s[0]) for s in statements))
        return real(statements, *args, **kwargs)

    monkeypatch.setattr(rows, "run_together", counting)
    push_answer(fake_google, "Sale hoy.")
    send_message(api_a, agent_id, "¿Y mi pedido?")

    with_intents = [r for r in round_trips if "intent_detected" in r]
    assert len(with_intents) == 1
    assert "turn_token" in with_intents[0] and "left(content" in with_intents[0]
    assert INTENTS_LINE + "saludo" in _system(fake_google.generate_requests[-1])


def test_the_session_start_is_shown_in_the_tenants_zone() -> None:
    zone = ZoneInfo("America/Mexico_City")
    started = timezone.localtime(datetime(2026, 11, 29, 21, 25, tzinfo=UTC), zone)
    block = context_block(
        now=timezone.localtime(timezone.now(), zone),
        company="Acme",
        agent_name="Lucía",
        contact=None,
        variables={},
        session=Session(id="c-1", started_at=started, previous_intents=("a", "b")),
    )

    assert "- Conversación: c-1, iniciada el domingo, 29 de noviembre de 2026, 15:25" in block
    assert INTENTS_LINE + "a, b" in block
