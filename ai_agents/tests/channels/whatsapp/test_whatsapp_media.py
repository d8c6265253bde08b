"""Voice notes and images over the reference payloads, through the real webhook and the
real-time task, with the fake Graph API serving the media and the fake Google server hearing
it: the transcript becomes the message, a usage row is written, and every failure (lookup 404,
too large, model error, no model) gets the customer a request to write instead."""

from __future__ import annotations

import base64
import copy
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import HandoffSettings, Message
from ai_agents.tests.channels.whatsapp.support import (
    APP_SECRET,
    NUMBER_B,
    binding_create,
    payload,
    post,
    respond,
    user_messages,
    with_number,
)
from erp.llm.models import UsageLog
from erp.tenancy.scoping import tenant_scope
from erp.testing.celery_worker import worker_running
from erp.testing.deadlines import wait_until
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph

AUDIO_ID = "1177845126715924"  # whatsapp_audio_voice.json
IMAGE_ID = "1003383421387256"  # whatsapp_image.json
VOICE = b"OggS\x00\x02" + bytes(range(256)) * 4  # an Ogg page header and some bytes
PHOTO = b"\xff\xd8\xff\xe0" + bytes(200)
TRANSCRIPT = "Hola, quiero cambiar la dirección de entrega de mi pedido"
ASK_ES = "Lo siento, no he podido escuchar tu mensaje de voz. ¿Podrías escribirme lo que necesitas?"
TOKEN_A = "EAAG-token-a"  # support.wa_binding


@pytest.fixture
def media_root(settings: Any, tmp_path: Path) -> Path:
    settings.WHATSAPP_MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


def _usage(tenant: Any, operation: str) -> list[UsageLog]:
    with tenant_scope(tenant):
        return list(UsageLog.objects.filter(operation=operation))


def _inline(fake_google: FakeGoogle, index: int) -> tuple[str, bytes]:
    """The media part of the `index`th generateContent request: (mime type, bytes)."""
    part = fake_google.generate_requests[index]["contents"][0]["parts"][0]["inlineData"]
    return part["mime_type"], base64.urlsafe_b64decode(part["data"])


def _sent(fake_graph: FakeGraph) -> list[str]:
    return [b["text"]["body"] for b in fake_graph.sent]


@pytest.mark.django_db
def test_a_voice_note_is_transcribed_and_answered_from_its_transcript(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
    media_root: Path,
) -> None:
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    fake_google.push(fake_google.reply(TRANSCRIPT, input_tokens=40, output_tokens=12))
    respond(fake_google, "Claro, ¿cuál es la nueva dirección?")

    with run_tasks():
        response = post(client, payload("audio_voice"))

    assert response.status_code == 200
    [message] = user_messages(tenant_a)
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
    assert _inline(fake_google, 0) == ("audio/ogg", VOICE)
    assert TRANSCRIPT in str(fake_google.generate_requests[1]["contents"])
    assert _sent(fake_graph) == ["Claro, ¿cuál es la nueva dirección?"]
    # Lookup then download, each once, with the binding's token.
    media = fake_graph.media_requests
    assert [r.path for r in media] == [f"/v24.0/{AUDIO_ID}", f"/media-download/{AUDIO_ID}"]
    assert {r.header("authorization") for r in media} == {f"Bearer {TOKEN_A}"}
    [row] = _usage(tenant_a, "transcription")
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
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
    settings: Any,
) -> None:
    if case != "lookup_404":
        fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    if case == "too_large":
        settings.WHATSAPP_MEDIA_MAX_BYTES = 100
    if case == "model_error":
        fake_google.push(fake_google.error(400, "Unsupported audio"))

    with run_tasks():
        post(client, payload("audio_voice"))

    [message] = user_messages(tenant_a)
    assert message.metadata["media"]["ask_to_write"] is True
    assert message.metadata["media"]["error"] == expected_error
    assert _sent(fake_graph) == [ASK_ES]
    # No model answers the unheard note; a failed lookup is not retried.
    expected_model_calls = 1 if case == "model_error" else 0
    assert len(fake_google.generate_requests) == expected_model_calls
    lookups = [r for r in fake_graph.media_requests if r.path == f"/v24.0/{AUDIO_ID}"]
    assert len(lookups) == 1
    downloads = [r for r in fake_graph.media_requests if r.path.startswith("/media-download/")]
    assert len(downloads) == (1 if case == "model_error" else 0)
    rows = _usage(tenant_a, "transcription")
    assert [r.success for r in rows] == ([False] if case == "model_error" else [])


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
    assert _sent(fake_graph) == [ASK_ES]


@pytest.mark.django_db
def test_an_image_is_described_for_a_multimodal_model_with_its_caption(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    fake_graph.media_put(IMAGE_ID, PHOTO, "image/jpeg", token=TOKEN_A)
    fake_google.push(fake_google.reply("Una bisagra de plástico partida por la mitad."))
    respond(fake_google, "Lamento la rotura; le enviamos una pieza nueva.")

    with run_tasks():
        post(client, payload("image"))

    [message] = user_messages(tenant_a)
    assert message.content == (
        "This is the part that broke\n"
        "[Imagen del cliente: Una bisagra de plástico partida por la mitad.]"
    )
    assert message.metadata["media"]["source"] == "description"
    assert _inline(fake_google, 0) == ("image/jpeg", PHOTO)
    assert [r.success for r in _usage(tenant_a, "image_description")] == [True]
    assert _sent(fake_graph) == ["Lamento la rotura; le enviamos una pieza nueva."]


@pytest.mark.django_db
def test_an_image_for_a_text_only_model_is_noted_as_received_without_fetching(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    wa_binding.agent.model = "gemma-2-9b-it"
    wa_binding.agent.save(update_fields=["model"])
    fake_graph.media_put(IMAGE_ID, PHOTO, "image/jpeg", token=TOKEN_A)
    respond(fake_google, "¿Qué pieza es?")

    with run_tasks():
        post(client, payload("image"))

    [message] = user_messages(tenant_a)
    assert message.content == "[imagen recibida] This is the part that broke"
    assert message.metadata["media"]["source"] == "none"
    assert fake_graph.media_requests == []
    assert _sent(fake_graph) == ["¿Qué pieza es?"]


@pytest.mark.django_db
def test_a_binding_token_is_never_used_for_another_tenants_media(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    tenant_b: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    # The media id belongs to tenant A's business; tenant B's number receives a message naming it.
    binding_create(tenant_b, NUMBER_B, token="EAAG-token-b")
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)

    with run_tasks():
        post(client, with_number(payload("audio_voice"), NUMBER_B))

    [message] = user_messages(tenant_b)
    assert message.metadata["media"]["error"] == "lookup_failed"
    assert {r.header("authorization") for r in fake_graph.media_requests} == {"Bearer EAAG-token-b"}
    assert user_messages(tenant_a) == []
    assert _sent(fake_graph) == [ASK_ES]
    assert _usage(tenant_a, "transcription") == []


@pytest.mark.django_db
def test_audio_is_kept_for_the_tenants_retention_days_then_deleted(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
    media_root: Path,
) -> None:
    from ai_agents.tasks import bulk_media_expire

    HandoffSettings.objects.for_tenant(tenant_a).update_or_create(
        tenant=tenant_a, defaults={"media_retention_days": 7}
    )
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    fake_google.push(fake_google.reply(TRANSCRIPT))
    respond(fake_google, "Claro.")
    with run_tasks():
        post(client, payload("audio_voice"))
    [message] = user_messages(tenant_a)
    kept = media_root / message.metadata["media"]["file"]
    assert kept.read_bytes() == VOICE

    assert bulk_media_expire() == 0  # within its 7 days
    assert kept.exists()

    with tenant_scope(tenant_a):
        metadata = message.metadata
        metadata["media"]["keep_until"] = "2020-01-01T00:00:00+00:00"
        Message.objects.filter(pk=message.pk).update(metadata=metadata)
    assert bulk_media_expire() == 1
    assert not kept.exists()
    [message] = user_messages(tenant_a)
    assert message.metadata["media"]["file"] == ""
    assert message.content == TRANSCRIPT  # the transcript stays


@pytest.mark.django_db
def test_a_customer_who_wrote_in_english_is_asked_in_english(
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
) -> None:
    respond(fake_google, "We open at 10.")
    with run_tasks():
        post(client, payload("text"))  # "Hi! What are your opening hours on Saturday?"
    with run_tasks():
        post(client, payload("audio_voice"))  # lookup 404: nobody can hear it

    assert _sent(fake_graph) == [
        "We open at 10.",
        "Sorry, I couldn't listen to your voice message. Could you write what you need?",
    ]
    assert user_messages(tenant_a)[1].metadata["media"]["language"] == "en"


@pytest.mark.slow
def test_a_real_worker_transcribes_keeps_and_answers_a_voice_note(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    client: Client,
    settings: Any,
) -> None:
    # given: tenant A keeps audio 3 days; a worker process on the threads pool (as in compose)
    HandoffSettings.objects.for_tenant(tenant_a).update_or_create(
        tenant=tenant_a, defaults={"media_retention_days": 3}
    )
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    fake_google.push(fake_google.reply(TRANSCRIPT))
    respond(fake_google, "Claro, ¿cuál es la nueva dirección?")
    media_root = tmp_path / "media"
    env = {
        "GOOGLE_AI_BASE_URL": fake_google.url,
        "GOOGLE_AI_API_KEY": settings.GOOGLE_AI_API_KEY,
        "LLM_DEFAULT_MODEL": settings.LLM_DEFAULT_MODEL,
        "WHATSAPP_APP_SECRET": APP_SECRET,
        "WHATSAPP_GRAPH_BASE_URL": fake_graph.url,
        "WHATSAPP_RETRY_BASE_MS": "0",
        "WHATSAPP_MEDIA_ROOT": str(media_root),
    }
    with worker_running(tmp_path, pool=("-P", "threads", "-c", "4"), prefix="media", **env):
        # when: the voice note arrives at the real webhook
        assert post(client, payload("audio_voice")).status_code == 200
        wait_until(lambda: len(fake_graph.sent) >= 1, what="the reply", timeout=60)

    # then: transcribed, answered from the transcript, kept for 3 days
    [message] = user_messages(tenant_a)
    assert message.content == TRANSCRIPT
    assert _sent(fake_graph) == ["Claro, ¿cuál es la nueva dirección?"]
    assert (media_root / message.metadata["media"]["file"]).read_bytes() == VOICE
    assert [r.success for r in _usage(tenant_a, "transcription")] == [True]


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
    client: Client,
    wa_binding: Any,
    tenant_a: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    run_tasks: Any,
    api_a: Any,
    api_b: Any,
) -> None:
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    fake_google.push(fake_google.reply(TRANSCRIPT))
    respond(fake_google, "Claro.")
    with run_tasks():
        post(client, payload("audio_voice"))
    [message] = user_messages(tenant_a)
    url = f"/api/v1/conversations/{message.conversation_id}"

    body = api_a.get(url).json()

    [customer] = [m for m in body["messages"] if m["role"] == "user"]
    assert customer["content"] == TRANSCRIPT
    assert customer["metadata"]["media"]["source"] == "transcription"
    assert customer["metadata"]["media"]["media_id"] == AUDIO_ID
    assert api_b.get(url).status_code == 404


@pytest.mark.slow
def test_two_voice_notes_at_once_are_each_fetched_and_transcribed_once(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    client: Client,
    settings: Any,
) -> None:
    # given: two voice notes in one batch (two tasks for one conversation), a slow model, and
    # a worker whose threads run both tasks at once
    data = payload("audio_voice")
    value = data["entry"][0]["changes"][0]["value"]
    second = copy.deepcopy(value["messages"][0])
    second.update(id="wamid.second-note", audio={**second["audio"], "id": "2277845126715925"})
    value["messages"].append(second)
    for media_id in (AUDIO_ID, "2277845126715925"):
        fake_graph.media_put(media_id, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    fake_google.push(
        fake_google.reply("Quiero cambiar la dirección de entrega", delay=1.0),
        fake_google.reply("Y también el teléfono de contacto", delay=1.0),
    )
    respond(fake_google, "Claro, ¿cuál es la nueva dirección?")
    respond(fake_google, "Y el teléfono, ¿cuál es?")
    env = {
        "GOOGLE_AI_BASE_URL": fake_google.url,
        "GOOGLE_AI_API_KEY": settings.GOOGLE_AI_API_KEY,
        "LLM_DEFAULT_MODEL": settings.LLM_DEFAULT_MODEL,
        "WHATSAPP_APP_SECRET": APP_SECRET,
        "WHATSAPP_GRAPH_BASE_URL": fake_graph.url,
        "WHATSAPP_RETRY_BASE_MS": "0",
    }
    with worker_running(tmp_path, pool=("-P", "threads", "-c", "4"), prefix="media2", **env):
        assert post(client, data).status_code == 200
        wait_until(lambda: len(fake_graph.sent) >= 2, what="two replies", timeout=60)
        time.sleep(1.5)  # a duplicate transcription would have been recorded by now

    # then: one lookup and one download per note, one transcription each
    paths = sorted(r.path for r in fake_graph.media_requests)
    expected = [
        f"{prefix}{media_id}"
        for media_id in (AUDIO_ID, "2277845126715925")
        for prefix in ("/v24.0/", "/media-download/")
    ]
    assert paths == sorted(expected)
    assert [r.success for r in _usage(tenant_a, "transcription")] == [True, True]
    assert [m.content for m in user_messages(tenant_a)] == [
        "Quiero cambiar la dirección de entrega",
        "Y también el teléfono de contacto",
    ]
