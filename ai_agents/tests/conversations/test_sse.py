"""SSE replies through Django's ASGI handler (AsyncClient): the first token reaches the client
before the fake model has finished writing, and the streamed reply is stored."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from erp.tenancy.models import Tenant
from erp.tenancy.services import apikey_create
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import api_client_for

ANSWER = "Abrimos de lunes a viernes de 8:00 a 20:00 y los sábados por la mañana."


def _parse(raw: str) -> list[tuple[str, Any]]:
    events = []
    for block in raw.split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


@pytest.mark.django_db(transaction=True)
def test_tokens_stream_before_the_model_finishes_and_the_reply_is_stored(
    tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    api = api_client_for(tenant_a)
    agent_id = api.post(
        "/api/v1/agents",
        {
            "name": "Lucía",
            "system_prompt": "Eres {{agent_name}}.",
            "processing_config": {"llm_retry_delay_ms": 0},
        },
        format="json",
    ).json()["id"]
    fake_google.push(
        fake_google.reply_json(
            {"action": "respond", "answer": ANSWER, "confidence": 0.9}, chunks=4, chunk_delay=0.25
        )
    )
    key = apikey_create(tenant=tenant_a, name="sse").key
    arrivals: list[tuple[float, str]] = []

    async def consume() -> None:
        client = AsyncClient()
        response = await client.post(
            f"/api/v1/agents/{agent_id}/messages",
            {"contact": {"external_id": "c1"}, "text": "¿Horario?"},
            content_type="application/json",
            headers={"authorization": f"Bearer {key}", "accept": "text/event-stream"},
        )
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/event-stream")
        async for chunk in response.streaming_content:  # type: ignore[attr-defined]  # an SSE stream
            arrivals.append(
                (time.monotonic(), chunk.decode() if isinstance(chunk, bytes) else chunk)
            )

    async_to_sync(consume)()

    events = _parse("".join(text for _t, text in arrivals))
    names = [name for name, _data in events]
    assert names[0] == "token"
    assert names[-2:] == ["citations", "done"]
    streamed = "".join(data["text"] for name, data in events if name == "token")
    assert streamed == ANSWER
    done = events[-1][1]
    assert done["reply"]["text"] == ANSWER
    first_token_at = next(t for t, text in arrivals if "event: token" in text)
    assert first_token_at < fake_google.stream_sent_at[-1]  # before the model's last chunk

    detail = api.get(f"/api/v1/conversations/{done['conversation_id']}").json()
    assert [m["content"] for m in detail["messages"]] == ["¿Horario?", ANSWER]


async def _drain(response: Any) -> str:
    parts = [c if isinstance(c, bytes) else c.encode() async for c in response.streaming_content]
    return b"".join(parts).decode()


@pytest.mark.django_db(transaction=True)
def test_stream_carries_a_reply_decided_before_the_model(
    tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    api = api_client_for(tenant_a)
    agent_id = api.post(
        "/api/v1/agents",
        {"name": "L", "system_prompt": "x", "escalation_message": "Le paso con una persona."},
        format="json",
    ).json()["id"]
    response = api.post(
        f"/api/v1/agents/{agent_id}/messages",
        {"contact": {"external_id": "c1"}, "text": "quiero hablar con un humano"},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert response.status_code == 200
    raw = async_to_sync(_drain)(response)
    events = _parse(raw)
    assert [n for n, _d in events] == ["token", "citations", "done"]
    assert events[0][1]["text"] == "Le paso con una persona."
    assert events[-1][1]["conversation_status"] == "escalated"
    assert fake_google.generate_requests == []


@pytest.mark.django_db(transaction=True)
def test_streaming_chunk_delay_paces_the_token_events(
    tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    """The model writes its 4 chunks at once; with `streaming_chunk_delay_ms` 200 the client
    gets them at least 200 ms apart, all of them, and the same stored reply."""
    api = api_client_for(tenant_a)
    agent_id = api.post(
        "/api/v1/agents",
        {
            "name": "L",
            "system_prompt": "x",
            "processing_config": {"llm_retry_delay_ms": 0, "streaming_chunk_delay_ms": 200},
        },
        format="json",
    ).json()["id"]
    fake_google.push(
        fake_google.reply_json({"action": "respond", "answer": ANSWER}, chunks=4, chunk_delay=0)
    )
    key = apikey_create(tenant=tenant_a, name="sse").key
    arrivals: list[tuple[float, str]] = []

    async def consume() -> None:
        response = await AsyncClient().post(
            f"/api/v1/agents/{agent_id}/messages",
            {"contact": {"external_id": "c1"}, "text": "¿Horario?"},
            content_type="application/json",
            headers={"authorization": f"Bearer {key}", "accept": "text/event-stream"},
        )
        async for chunk in response.streaming_content:  # type: ignore[attr-defined]  # an SSE stream
            text = chunk.decode() if isinstance(chunk, bytes) else chunk
            arrivals.extend((time.monotonic(), block) for block in text.split("\n\n") if block)

    async_to_sync(consume)()

    tokens = [t for t, block in arrivals if block.startswith("event: token")]
    assert len(tokens) >= 3
    gaps = [later - earlier for earlier, later in itertools.pairwise(tokens)]
    assert min(gaps) >= 0.19
    events = _parse("\n\n".join(block for _t, block in arrivals) + "\n\n")
    assert "".join(d["text"] for n, d in events if n == "token") == ANSWER
    assert events[-1][1]["reply"]["text"] == ANSWER


@pytest.mark.django_db
def test_streaming_disabled_answers_json(api_a: Any, fake_google: FakeGoogle) -> None:
    agent_id = api_a.post(
        "/api/v1/agents",
        {"name": "L", "system_prompt": "x", "processing_config": {"streaming_enabled": False}},
        format="json",
    ).json()["id"]
    fake_google.push(fake_google.reply_json({"action": "respond", "answer": "Hola."}))
    response = api_a.post(
        f"/api/v1/agents/{agent_id}/messages",
        {"contact": {"external_id": "c1"}, "text": "hola"},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["reply"]["text"] == "Hola."


@pytest.mark.django_db(transaction=True)
def test_rate_limited_stream_is_a_429_json_before_the_stream_starts(
    tenant_a: Tenant, fake_google: FakeGoogle
) -> None:
    api = api_client_for(tenant_a)
    agent_id = api.post(
        "/api/v1/agents",
        {
            "name": "L",
            "system_prompt": "x",
            "processing_config": {"messages_per_minute": 2, "llm_retry_delay_ms": 0},
        },
        format="json",
    ).json()["id"]

    def send(text: str) -> Any:
        return api.post(
            f"/api/v1/agents/{agent_id}/messages",
            {"contact": {"external_id": "c1"}, "text": text},
            format="json",
            HTTP_ACCEPT="text/event-stream",
        )

    for n in range(2):
        fake_google.push(fake_google.reply_json({"action": "respond", "answer": f"Hola {n}."}))
        response = send(f"hola {n}")
        assert response.status_code == 200
        assert [name for name, _d in _parse(async_to_sync(_drain)(response))][-1] == "done"

    limited = send("hola otra vez")

    assert limited.status_code == 429
    assert limited["Content-Type"].startswith("application/json")
    assert 1 <= int(limited["Retry-After"]) <= 60
    error = limited.json()["error"]
    assert error["code"] == "rate_limited"
    assert len(fake_google.generate_requests) == 2  # no model call for the limited one
    detail = api.get(f"/api/v1/conversations/{error['conversation_id']}").json()
    assert [m["content"] for m in detail["messages"] if m["role"] == "user"][-1] == (
        "hola otra vez"  # stored all the same (RN-4)
    )
