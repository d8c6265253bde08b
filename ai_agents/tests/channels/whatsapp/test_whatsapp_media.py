"""Voice notes and images over the reference payloads, through the real webhook and the
real-time task, with the fake Graph API serving the media and the fake Google server hearing
it: the transcript becomes the message, a usage row is written, and every failure (lookup 404,
too large, model error, no model) gets the customer a request to write instead."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import HandoffSettings, Message
from ai_agents.tests.channels.whatsapp.media_support import (
    ASK_ES,
    AUDIO_ID,
    IMAGE_ID,
    PHOTO,
    TOKEN_A,
    TRANSCRIPT,
    VOICE,
    inline_media,
    sent_texts,
    usage_rows,
)
from ai_agents.tests.channels.whatsapp.support import (
    NUMBER_B,
    Line,
    binding_create,
    payload,
    post,
    respond,
    user_messages,
    with_number,
)
from erp.tenancy.scoping import tenant_scope
from erp.testing.fake_graph import FakeGraph


@pytest.mark.django_db
def test_a_voice_note_is_transcribed_and_answered_from_its_transcript(
    line: Line,
    media_root: Path,
) -> None:
    line.graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    line.google.push(line.google.reply(TRANSCRIPT, input_tokens=40, output_tokens=12))
    respond(line.google, "Claro, ¿cuál es la nueva dirección?")

    response = line.customer_sends(payload("audio_voice"))

    assert response.status_code == 200
    [message] = user_messages(line.tenant)
    assert message.content == TRANSCRIPT
    facts = message.metadata["media"]
    assert {k: facts[k] for k in ("kind", "media_id", "mime_type", "source", "size")} == {
        "kind": "audio",
        "media_id": AUDIO_ID,
        "mime_type": "audio/ogg; codecs=opus",
        "source": "transcription",
        "size": len(VOICE),
    }
    # The model heard the bytes inline, then answered the transcript.
    assert inline_media(line.google, 0) == ("audio/ogg", VOICE)
    assert TRANSCRIPT in str(line.google.generate_requests[1]["contents"])
    assert sent_texts(line.graph) == ["Claro, ¿cuál es la nueva dirección?"]
    # Lookup then download, each once, with the binding's token.
    media = line.graph.media_requests
    assert [r.path for r in media] == [f"/v24.0/{AUDIO_ID}", f"/media-download/{AUDIO_ID}"]
    assert {r.header("authorization") for r in media} == {f"Bearer {TOKEN_A}"}
    [row] = usage_rows(line.tenant, "transcription")
    assert (row.success, row.input_tokens, row.output_tokens, row.message_id) == (
        True,
        40,
        12,
        message.pk,
    )
    assert not media_root.exists()  # retention 0 (the default): the audio is not kept


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("case", "expected_error"),
    [
        ("lookup_404", "lookup_failed"),
        ("too_large", "too_large"),
        ("model_error", "llm_bad_request"),
    ],
)
def test_a_voice_note_that_cannot_be_heard_asks_the_customer_to_write(
    case: str,
    expected_error: str,
    line: Line,
    settings: Any,
) -> None:
    if case != "lookup_404":
        line.graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    if case == "too_large":
        settings.WHATSAPP_MEDIA_MAX_BYTES = 100
    if case == "model_error":
        line.google.push(line.google.error(400, "Unsupported audio"))

    line.customer_sends(payload("audio_voice"))

    [message] = user_messages(line.tenant)
    assert message.metadata["media"]["ask_to_write"] is True
    assert message.metadata["media"]["error"] == expected_error
    assert sent_texts(line.graph) == [ASK_ES]
    # No model answers the unheard note; a failed lookup is not retried.
    expected_model_calls = 1 if case == "model_error" else 0
    assert len(line.google.generate_requests) == expected_model_calls
    lookups = [r for r in line.graph.media_requests if r.path == f"/v24.0/{AUDIO_ID}"]
    assert len(lookups) == 1
    downloads = [r for r in line.graph.media_requests if r.path.startswith("/media-download/")]
    assert len(downloads) == (1 if case == "model_error" else 0)
    rows = usage_rows(line.tenant, "transcription")
    assert [r.success for r in rows] == ([False] if case == "model_error" else [])


@pytest.mark.django_db
def test_past_the_runs_media_budget_nothing_is_fetched_or_paid(
    line: Line, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agents.services import whatsapp_media

    monkeypatch.setattr(whatsapp_media, "MEDIA_PER_RUN", 0)  # a flood: the budget is spent
    line.graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)

    line.customer_sends(payload("audio_voice"))

    [message] = user_messages(line.tenant)
    assert message.metadata["media"]["error"] == "too_many"
    assert message.metadata["media"]["ask_to_write"] is True
    assert line.graph.media_requests == [] and line.google.generate_requests == []
    assert usage_rows(line.tenant, "transcription") == []
    assert sent_texts(line.graph) == [ASK_ES]


@pytest.mark.django_db
def test_without_a_model_a_voice_note_is_not_fetched_and_the_customer_is_asked_to_write(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_graph: FakeGraph,
    run_tasks: Any,
    settings: Any,
) -> None:
    settings.GOOGLE_AI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)

    with run_tasks():
        post(client, payload("audio_voice"))

    [message] = user_messages(tenant_a)
    assert message.metadata["media"]["error"] == "no_model"
    assert fake_graph.media_requests == []
    assert sent_texts(fake_graph) == [ASK_ES]


@pytest.mark.django_db
def test_an_image_is_described_for_a_multimodal_model_with_its_caption(
    line: Line,
) -> None:
    line.graph.media_put(IMAGE_ID, PHOTO, "image/jpeg", token=TOKEN_A)
    line.google.push(line.google.reply("Una bisagra de plástico partida por la mitad."))
    respond(line.google, "Lamento la rotura; le enviamos una pieza nueva.")

    line.customer_sends(payload("image"))

    [message] = user_messages(line.tenant)
    assert message.content == (
        "This is the part that broke\n"
        "[Imagen del cliente: Una bisagra de plástico partida por la mitad.]"
    )
    assert message.metadata["media"]["source"] == "description"
    assert inline_media(line.google, 0) == ("image/jpeg", PHOTO)
    assert [r.success for r in usage_rows(line.tenant, "image_description")] == [True]
    assert sent_texts(line.graph) == ["Lamento la rotura; le enviamos una pieza nueva."]


@pytest.mark.django_db
def test_an_image_for_a_text_only_model_is_noted_as_received_without_fetching(
    line: Line,
    wa_binding: Any,
) -> None:
    wa_binding.agent.model = "gemma-2-9b-it"
    wa_binding.agent.save(update_fields=["model"])
    line.graph.media_put(IMAGE_ID, PHOTO, "image/jpeg", token=TOKEN_A)
    respond(line.google, "¿Qué pieza es?")

    line.customer_sends(payload("image"))

    [message] = user_messages(line.tenant)
    assert message.content == "[imagen recibida] This is the part that broke"
    assert message.metadata["media"]["source"] == "none"
    assert line.graph.media_requests == []
    assert sent_texts(line.graph) == ["¿Qué pieza es?"]


@pytest.mark.django_db
def test_a_binding_token_is_never_used_for_another_tenants_media(
    line: Line,
    tenant_b: Any,
) -> None:
    # The media id belongs to tenant A's business; tenant B's number receives a message naming it.
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b")
    line.graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)

    line.customer_sends(with_number(payload("audio_voice"), NUMBER_B))

    [message] = user_messages(tenant_b)
    assert message.metadata["media"]["error"] == "lookup_failed"
    assert {r.header("authorization") for r in line.graph.media_requests} == {"Bearer EAAG-token-b"}
    assert user_messages(line.tenant) == []
    assert sent_texts(line.graph) == [ASK_ES]
    assert usage_rows(line.tenant, "transcription") == []


@pytest.mark.django_db
def test_audio_is_kept_for_the_tenants_retention_days_then_deleted(
    line: Line,
    media_root: Path,
) -> None:
    from ai_agents.tasks import bulk_media_expire

    HandoffSettings.objects.for_tenant(line.tenant).update_or_create(
        tenant=line.tenant, defaults={"media_retention_days": 7}
    )
    line.graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    line.google.push(line.google.reply(TRANSCRIPT))
    respond(line.google, "Claro.")
    line.customer_sends(payload("audio_voice"))
    [message] = user_messages(line.tenant)
    kept = media_root / message.metadata["media"]["file"]
    assert kept.read_bytes() == VOICE

    assert bulk_media_expire() == 0  # within its 7 days
    assert kept.exists()

    with tenant_scope(line.tenant):
        metadata = message.metadata
        metadata["media"]["keep_until"] = "2020-01-01T00:00:00+00:00"
        Message.objects.filter(pk=message.pk).update(metadata=metadata)
    # A file written moments ago (its message's keep_until not saved yet) is left alone.
    fresh = kept.parent / f"{uuid.uuid4()}.ogg"
    fresh.write_bytes(VOICE)
    assert bulk_media_expire() == 0 and kept.exists() and fresh.exists()
    an_hour_ago = time.time() - 3600
    os.utime(kept, (an_hour_ago, an_hour_ago))
    assert bulk_media_expire() == 1
    assert not kept.exists() and fresh.exists()
    [message] = user_messages(line.tenant)
    assert message.metadata["media"]["file"] == ""
    assert message.content == TRANSCRIPT  # the transcript stays


@pytest.mark.django_db
def test_a_customer_who_wrote_in_english_is_asked_in_english(
    line: Line,
) -> None:
    respond(line.google, "We open at 10.")
    with line.run_tasks():
        post(line.client, payload("text"))  # "Hi! What are your opening hours on Saturday?"
    with line.run_tasks():
        post(line.client, payload("audio_voice"))  # lookup 404: nobody can hear it

    assert sent_texts(line.graph) == [
        "We open at 10.",
        "Sorry, I couldn't listen to your voice message. Could you write what you need?",
    ]
    assert user_messages(line.tenant)[1].metadata["media"]["language"] == "en"


@pytest.mark.django_db
def test_the_webhook_stores_the_voice_note_without_fetching_it(
    client: Client, wa_binding: Any, tenant_a: Any, fake_graph: FakeGraph
) -> None:
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)

    response = post(client, payload("audio_voice"))  # no task runs

    assert response.status_code == 200
    assert fake_graph.media_requests == []
    [message] = user_messages(tenant_a)
    assert "media" not in message.metadata
    assert message.metadata["channel_metadata"]["media"]["id"] == AUDIO_ID


@pytest.mark.django_db
def test_the_api_shows_the_transcript_and_its_facts_to_the_tenant_only(
    line: Line,
    api_a: Any,
    api_b: Any,
) -> None:
    line.graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    line.google.push(line.google.reply(TRANSCRIPT))
    respond(line.google, "Claro.")
    line.customer_sends(payload("audio_voice"))
    [message] = user_messages(line.tenant)
    url = f"/api/v1/conversations/{message.conversation_id}"

    body = api_a.get(url).json()

    [customer] = [m for m in body["messages"] if m["role"] == "user"]
    assert customer["content"] == TRANSCRIPT
    assert customer["metadata"]["media"]["source"] == "transcription"
    assert customer["metadata"]["media"]["media_id"] == AUDIO_ID
    assert api_b.get(url).status_code == 404
