"""Summaries of the cut history (strategies summarize / smart) through the REST API against
the fake Gemini server: generated after the reply by a realtime task, used from the next
message on."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ai_agents.models import Agent, Conversation, Message
from ai_agents.services.history_summary import history_summary_generate
from erp.llm.models import UsageLog
from erp.tenancy.models import Tenant
from erp.testing.fake_google import FakeGoogle

FAST = {"llm_retry_delay_ms": 0, "llm_timeout_ms": 5000, "total_timeout_ms": 10000}


def _agent(api: Any, strategy: str, summarize_after: int = 2) -> str:
    body = {
        "name": "Lucía",
        "system_prompt": "Eres {{agent_name}}.",
        "processing_config": FAST,
        "history_config": {
            "truncation_strategy": strategy,
            "max_messages": 4,
            "summarize_after": summarize_after,
        },
    }
    response = api.post("/api/v1/agents", body, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def _send(api: Any, agent_id: str, text: str, contact: str = "cli-1") -> Any:
    body = {"contact": {"external_id": contact}, "text": text}
    response = api.post(f"/api/v1/agents/{agent_id}/messages", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _answer(fake: FakeGoogle, text: str) -> None:
    fake.push(fake.reply_json({"action": "respond", "answer": text, "confidence": 0.9}))


def _prompt(request: dict[str, Any]) -> str:
    system = request["systemInstruction"]["parts"][0]["text"]
    turns = " ".join(p.get("text", "") for c in request["contents"] for p in c["parts"])
    return system + "\n" + turns


@pytest.mark.django_db
@pytest.mark.parametrize("strategy", ["summarize", "smart"])
def test_summary_of_the_cut_history_is_in_the_prompt_from_the_next_message(
    api_a: Any, tenant_a: Tenant, fake_google: FakeGoogle, run_tasks: Any, strategy: str
) -> None:
    agent_id = _agent(api_a, strategy)
    for n in range(1, 4):  # 3 exchanges: 6 messages, up to 4 in the prompt
        _answer(fake_google, f"respuesta {n}")
        body = _send(api_a, agent_id, f"pregunta {n} sobre el pedido 77{n}")
    assert "Resumen de conversación anterior" not in _prompt(fake_google.generate_requests[-1])

    _answer(fake_google, "respuesta 4")
    fake_google.push(fake_google.reply("El cliente pregunta por los pedidos 771 y 772."))
    with run_tasks():  # the summary task runs after the reply's commit
        _send(api_a, agent_id, "pregunta 4")
    asked = _prompt(fake_google.generate_requests[-1])  # the summary call
    assert "pregunta 2 sobre el pedido 772" in asked
    # smart keeps the first message in the prompt: the summary is of the middle
    assert ("pregunta 1 sobre el pedido 771" in asked) == (strategy == "summarize")
    assert "Resumen de conversación anterior" not in _prompt(fake_google.generate_requests[-2])

    conversation = Conversation.objects.for_tenant(tenant_a).get(pk=body["conversation_id"])
    assert conversation.history_summary["text"] == "El cliente pregunta por los pedidos 771 y 772."
    assert conversation.history_summary["count"] >= 2
    summary_usage = UsageLog.objects.for_tenant(tenant_a).filter(
        conversation_id=conversation.pk, operation="llm_request"
    )
    assert summary_usage.count() == 5  # 4 answers + the summary

    _answer(fake_google, "respuesta 5")
    _send(api_a, agent_id, "pregunta 5")
    prompt = _prompt(fake_google.generate_requests[-1])
    assert "[Resumen de conversación anterior: El cliente pregunta por los pedidos" in prompt
    if strategy == "summarize":
        assert "pedido 771" not in prompt.split("[Resumen")[0]

    # A few more cut messages keep the summary without a new summary call each time.
    calls = len(fake_google.generate_requests)
    _answer(fake_google, "respuesta 6")
    with run_tasks():
        _send(api_a, agent_id, "pregunta 6")
    assert len(fake_google.generate_requests) == calls + 1
    assert "[Resumen de conversación anterior" in _prompt(fake_google.generate_requests[-1])


@pytest.mark.django_db
def test_smart_keeps_the_conversations_real_first_message_in_a_long_conversation(
    api_a: Any, fake_google: FakeGoogle
) -> None:
    """Only the latest 20 messages are read for the history; `smart` still keeps the very
    first one (read with them) when the conversation is longer."""
    agent_id = _agent(api_a, "smart", summarize_after=1000)
    for n in range(1, 13):  # 12 exchanges: 24 messages
        _answer(fake_google, f"respuesta {n}")
        _send(api_a, agent_id, f"pregunta {n}")

    _answer(fake_google, "respuesta 13")
    _send(api_a, agent_id, "pregunta 13")
    contents = fake_google.generate_requests[-1]["contents"]
    # (consecutive customer turns reach Gemini as one turn, joined by a blank line; each
    # earlier turn starts with its time)
    lines = [
        re.sub(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d\] ", "", line)
        for c in contents
        for p in c["parts"]
        for line in p["text"].split("\n")
        if line
    ]
    assert lines[0] == "pregunta 1"  # the conversation's first message
    assert lines[-1] == "pregunta 13"
    assert "pregunta 2" not in lines and "respuesta 1" not in lines


@pytest.mark.django_db
def test_no_summary_before_summarize_after_messages(
    api_a: Any, fake_google: FakeGoogle, run_tasks: Any
) -> None:
    """`summarize_after` 12: the history is cut from the 4th exchange on, summarized only
    once the conversation holds 12 messages."""
    agent_id = _agent(api_a, "summarize", summarize_after=12)
    for n in range(1, 7):  # 6 exchanges: 12 messages, the history cut since the 4th
        _answer(fake_google, f"respuesta {n}")
        with run_tasks():
            _send(api_a, agent_id, f"pregunta {n}")
    assert len(fake_google.generate_requests) == 6  # answers only: no summary call

    _answer(fake_google, "respuesta 7")
    fake_google.push(fake_google.reply("El cliente hizo seis preguntas."))
    with run_tasks():
        _send(api_a, agent_id, "pregunta 7")  # 12 stored before it
    summary_call = _prompt(fake_google.generate_requests[-1])
    assert len(fake_google.generate_requests) == 8 and "pregunta 1" in summary_call


@pytest.mark.django_db
def test_offline_summary_is_extractive_and_incremental(tenant_a: Tenant) -> None:
    agent = Agent.objects.for_tenant(tenant_a).create(
        tenant=tenant_a,
        name="Offline",
        provider=Agent.Provider.OFFLINE,
        history_config={"truncation_strategy": "summarize", "max_messages": 4},
    )
    conversation = Conversation.objects.for_tenant(tenant_a).create(
        tenant=tenant_a, agent=agent, channel="api", channel_conversation_id="x"
    )
    messages = Message.objects.for_tenant(tenant_a)
    stored = [
        messages.create(
            tenant=tenant_a,
            conversation=conversation,
            agent=agent,
            role="user" if i % 2 == 0 else "assistant",
            content=f"mensaje {i} " + "palabra " * (60 if i == 0 else 2),
        )
        for i in range(6)
    ]
    first = history_summary_generate(conversation=conversation, upto_message_id=str(stored[1].pk))
    assert first["count"] == 2
    assert "mensaje 0" in first["text"] and "mensaje 1" in first["text"]
    assert len(first["text"]) < 400  # the long message is cut
    conversation.refresh_from_db()
    second = history_summary_generate(conversation=conversation, upto_message_id=str(stored[3].pk))
    assert second["count"] == 4
    assert second["text"].startswith(first["text"])  # built on the previous summary
    assert "mensaje 3" in second["text"]
    assert not UsageLog.objects.for_tenant(tenant_a).exists()  # no model call offline


@pytest.mark.django_db
def test_summaries_stay_in_their_tenant(
    api_a: Any,
    api_b: Any,
    tenant_a: Tenant,
    tenant_b: Tenant,
    fake_google: FakeGoogle,
    run_tasks: Any,
) -> None:
    agent_a = _agent(api_a, "summarize")
    agent_b = _agent(api_b, "summarize")
    for n in range(1, 4):
        _answer(fake_google, f"a{n}")
        _send(api_a, agent_a, f"secreto de A número {n}")
        _answer(fake_google, f"b{n}")
        _send(api_b, agent_b, f"pregunta de B {n}")
    _answer(fake_google, "a4")
    fake_google.push(fake_google.reply("Resumen de A: secreto."))
    with run_tasks():
        _send(api_a, agent_a, "otra de A")
    _answer(fake_google, "b4")
    fake_google.push(fake_google.reply("Resumen de B."))
    with run_tasks():
        _send(api_b, agent_b, "otra de B")
    _answer(fake_google, "b5")
    _send(api_b, agent_b, "última de B")
    prompt_b = _prompt(fake_google.generate_requests[-1])
    assert "Resumen de B." in prompt_b
    assert "secreto" not in prompt_b
    assert Conversation.objects.for_tenant(tenant_b).get().history_summary["text"] == (
        "Resumen de B."
    )
