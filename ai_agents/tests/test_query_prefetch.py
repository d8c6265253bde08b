"""The local query embedding starts as a message arrives and the retrieval takes its result."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.core.cache import cache

from ai_agents.knowledge import embeddings
from ai_agents.knowledge.spaces import LOCAL_MODEL
from ai_agents.services.knowledge import document_ingest, knowledge_base_create
from ai_agents.services.knowledge_documents import document_add
from erp.tenancy.models import Tenant

pytestmark = pytest.mark.django_db

DOC = b"# Horario\n\nAbrimos de lunes a viernes de 8:00 a 20:00.\n"


@pytest.fixture
def inferences(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(thread name, text) of every local query inference."""
    seen: list[tuple[str, str]] = []
    original = embeddings._query_vector

    def recorded(text: str) -> list[float]:
        seen.append((threading.current_thread().name, text))
        return original(text)

    monkeypatch.setattr(embeddings, "_query_vector", recorded)
    return seen


def _fresh(text: str) -> str:
    """A question no cache has seen."""
    text = f"{text} {uuid.uuid4().hex[:8]}"
    cache.delete(embeddings.query_key(LOCAL_MODEL, text))
    return text


def _finished(text: str) -> None:
    future = embeddings._inflight.get(embeddings.query_key(LOCAL_MODEL, text))
    if future is not None:
        future.exception(timeout=30)


def test_prefetched_vector_is_the_one_retrieval_uses_computed_once(
    tenant_a: Tenant, inferences: list[tuple[str, str]]
) -> None:
    kb = knowledge_base_create(tenant=tenant_a, name="FAQ")
    text = _fresh("¿A qué hora abren?")

    embeddings.query_prefetch(text)
    _finished(text)
    vector = embeddings.embed_query(kb, text)

    assert len(inferences) == 1
    assert inferences[0][0].startswith("kb-query")  # the background pool, not this thread
    direct = embeddings.local_model().query(text).tolist()
    assert vector == pytest.approx(direct, abs=1e-5)
    assert embeddings.embed_query(kb, text) == vector  # cached: no second inference
    assert len(inferences) == 1


def test_a_failed_background_job_is_computed_again_by_the_request(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = knowledge_base_create(tenant=tenant_a, name="FAQ")
    original = embeddings._query_vector

    def failing_in_background(text: str) -> list[float]:
        if threading.current_thread().name.startswith("kb-query"):
            raise RuntimeError("engine failed")
        return original(text)

    monkeypatch.setattr(embeddings, "_query_vector", failing_in_background)
    text = _fresh("¿Hacen envíos?")
    embeddings.query_prefetch(text)
    _finished(text)

    assert len(embeddings.embed_query(kb, text)) == 384


def test_pipeline_starts_the_next_questions_embedding_on_arrival(
    tenant_a: Tenant, inferences: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agents.conversations.engine import Inbound, message_process
    from ai_agents.models import Message
    from ai_agents.services.agents import agent_create

    kb = knowledge_base_create(tenant=tenant_a, name="FAQ")
    added = document_add(kb=kb, data=DOC, filename="faq.md", enqueue=False)
    document_ingest(document=added.document)
    agent = agent_create(
        tenant=tenant_a,
        data={"name": "Ana", "system_prompt": "Eres {{agent_name}}.", "knowledge_bases": [kb.pk]},
    )
    started: list[str] = []
    original_prefetch = embeddings.query_prefetch

    def recorded_prefetch(text: str) -> Any:
        started.append(text)
        return original_prefetch(text)

    monkeypatch.setattr(embeddings, "query_prefetch", recorded_prefetch)

    first, second = _fresh("¿A qué hora abren?"), _fresh("¿Abren el sábado?")
    results = [
        message_process(agent=agent, inbound=Inbound(text=text, contact={"external_id": "c1"}))
        for text in (first, second)
    ]

    # The first message shows the agent's knowledge base uses the local model; from then on
    # the embedding starts as the message arrives. Each question is embedded exactly once.
    assert started == [second]
    assert sorted(text for _thread, text in inferences) == sorted([first, second])
    assert all(r.reply is not None for r in results)
    # Both searched the knowledge base (the random suffix may leave the offline answer below
    # its confidence floor: then it offers a person and cites nothing, yet used the chunks).
    replies = Message.objects.for_tenant(tenant_a).filter(role=Message.Role.ASSISTANT)
    assert [bool(m.rag_chunks_used) for m in replies] == [True, True]


def test_an_agent_without_a_knowledge_base_embeds_only_what_words_leave_open(
    tenant_a: Tenant, inferences: list[tuple[str, str]]
) -> None:
    """No knowledge base needs the vector: an ordinary question is settled by the detector's
    screen without one (~20 ms of CPU saved per message); an indirect request for a person is
    read by the learned layer, over the vector computed then."""
    from ai_agents.conversations.engine import Inbound, message_process
    from ai_agents.services.agents import agent_create

    agent = agent_create(tenant=tenant_a, data={"name": "Ana", "system_prompt": "Eres Ana."})
    ordinary = _fresh("¿Hacen envíos a Sevilla el mismo día?")
    result = message_process(
        agent=agent, inbound=Inbound(text=ordinary, contact={"external_id": "c1"})
    )
    assert result.reply is not None and inferences == []

    indirect = _fresh("Necesito que un humano revise mi caso")
    message_process(agent=agent, inbound=Inbound(text=indirect, contact={"external_id": "c2"}))
    assert [text for _thread, text in inferences] == [indirect]


def test_the_loop_rule_computes_vectors_only_for_messages_the_bot_answered(
    inferences: list[tuple[str, str]],
) -> None:
    """A message written while a person attended (its result has no reply) was never the
    bot's question: after the hand-back it has no vector unless one was cached."""
    from types import SimpleNamespace

    from ai_agents.conversations.escalation_check import _loop_vectors
    from ai_agents.conversations.history_sql import UNANSWERED
    from ai_agents.rules.history import HistoryItem

    asked, to_person, now = (
        _fresh("¿la piscina está climatizada?"),
        _fresh("es el pedido 1234, gracias"),
        _fresh("o sea, ¿la piscina está caliente?"),
    )
    turn = SimpleNamespace(
        text=now,
        history=[
            HistoryItem(role="user", content=asked),
            HistoryItem(role="assistant", content="Abrimos de 6:00 a 22:00 todos los días."),
            HistoryItem(role="user", content=to_person, outcome=UNANSWERED),
        ],
    )
    vector_of = _loop_vectors(turn)  # type: ignore[arg-type]  # the two fields it reads
    assert vector_of(to_person) is None
    assert vector_of(asked) is not None and vector_of(now) is not None
    assert sorted(text for _thread, text in inferences) == sorted([asked, now])
