"""A burst's query vector is computed once, for its text once the burst seems over, not once
per message (the real local model, on the embedding pool)."""

from __future__ import annotations

import time
import uuid

import pytest
from django.core.cache import cache

from ai_agents.conversations import burst_prefetch
from ai_agents.knowledge import embeddings
from ai_agents.knowledge.spaces import LOCAL_MODEL


@pytest.fixture
def inferences(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = embeddings._query_vector

    def recorded(text: str) -> list[float]:
        seen.append(text)
        return original(text)

    monkeypatch.setattr(embeddings, "_query_vector", recorded)
    monkeypatch.setattr(burst_prefetch, "DELAY_S", 0.3)
    return seen


def _fresh(text: str) -> str:
    text = f"{text} {uuid.uuid4().hex[:8]}"
    cache.delete(embeddings.query_key(LOCAL_MODEL, text))
    return text


def _computed(text: str, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    key = embeddings.query_key(LOCAL_MODEL, text)
    while time.monotonic() < deadline:
        if embeddings._query_lru.get(key) is not None:
            return True
        time.sleep(0.02)
    return False


def test_a_burst_of_three_messages_costs_one_vector_of_its_whole_text(
    inferences: list[str],
) -> None:
    conversation = str(uuid.uuid4())
    first = _fresh("hola")
    second = f"{first}\nuna pregunta"
    whole = f"{second}\n¿tienen envío a Saltillo?"

    for text in (first, second, whole):  # each message's task, 0.1 s apart
        burst_prefetch.prefetch_later(conversation, text, due_in_s=2.5)
        time.sleep(0.1)

    assert _computed(whole)
    assert inferences == [whole]
    assert embeddings.local_query_vector(whole)  # the turn finds it: no second inference
    assert inferences == [whole]


def test_a_burst_due_soon_starts_its_vector_before_it_is_due(inferences: list[str]) -> None:
    text = _fresh("¿abren el domingo?")
    started = time.monotonic()

    burst_prefetch.prefetch_later(str(uuid.uuid4()), text, due_in_s=0.5)

    assert _computed(text)
    assert time.monotonic() - started < 0.3 + 0.25  # not after DELAY_S: LEAD_S before due
    assert text not in burst_prefetch.waiting().values()


def test_two_conversations_keep_their_own_texts(inferences: list[str]) -> None:
    one, other = _fresh("talla mediana"), _fresh("¿aceptan tarjeta?")

    burst_prefetch.prefetch_later(str(uuid.uuid4()), one, due_in_s=2.5)
    burst_prefetch.prefetch_later(str(uuid.uuid4()), other, due_in_s=2.5)

    assert _computed(one) and _computed(other)
    assert sorted(inferences) == sorted([one, other])


def test_a_failed_vector_does_not_stop_the_later_ones(
    inferences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, fine = _fresh("mensaje roto"), _fresh("¿hacen factura?")
    original = embeddings.query_prefetch

    def failing_once(text: str) -> None:
        if text == broken:
            raise RuntimeError("the embedding pool is gone")
        original(text)

    monkeypatch.setattr(burst_prefetch, "query_prefetch", failing_once)
    burst_prefetch.prefetch_later(str(uuid.uuid4()), broken, due_in_s=0.5)
    time.sleep(0.4)
    burst_prefetch.prefetch_later(str(uuid.uuid4()), fine, due_in_s=0.5)

    assert _computed(fine)  # the scheduler thread survived the failure
    assert inferences == [fine]
