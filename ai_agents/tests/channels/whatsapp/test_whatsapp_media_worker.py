"""Voice notes through a real Celery worker process (threads pool, as compose runs it): the
webhook stores, the worker fetches, transcribes, keeps and answers; two notes at once are each
fetched and transcribed once."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from ai_agents.models import HandoffSettings
from ai_agents.tests.channels.whatsapp.media_support import (
    AUDIO_ID,
    TOKEN_A,
    TRANSCRIPT,
    VOICE,
    sent_texts,
    usage_rows,
)
from ai_agents.tests.channels.whatsapp.support import (
    payload,
    post,
    respond,
    user_messages,
    worker_env,
)
from erp.testing.celery_worker import worker_running
from erp.testing.deadlines import wait_until
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_graph import FakeGraph


@pytest.mark.slow
def test_a_real_worker_transcribes_keeps_and_answers_a_voice_note(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    client: Client,
) -> None:
    # given: tenant A keeps audio 3 days; a worker process on the threads pool (as in compose)
    HandoffSettings.objects.for_tenant(tenant_a).update_or_create(
        tenant=tenant_a, defaults={"media_retention_days": 3}
    )
    fake_graph.media_put(AUDIO_ID, VOICE, "audio/ogg; codecs=opus", token=TOKEN_A)
    fake_google.push(fake_google.reply(TRANSCRIPT))
    respond(fake_google, "Claro, ¿cuál es la nueva dirección?")
    media_root = tmp_path / "media"
    env = worker_env(fake_google, fake_graph, WHATSAPP_MEDIA_ROOT=str(media_root))
    with worker_running(tmp_path, pool=("-P", "threads", "-c", "4"), prefix="media", **env):
        # when: the voice note arrives at the real webhook
        assert post(client, payload("audio_voice")).status_code == 200
        wait_until(lambda: len(fake_graph.sent) >= 1, what="the reply", timeout=60)

    # then: transcribed, answered from the transcript, kept for 3 days
    [message] = user_messages(tenant_a)
    assert message.content == TRANSCRIPT
    assert sent_texts(fake_graph) == ["Claro, ¿cuál es la nueva dirección?"]
    assert (media_root / message.metadata["media"]["file"]).read_bytes() == VOICE
    assert [r.success for r in usage_rows(tenant_a, "transcription")] == [True]


@pytest.mark.slow
def test_two_voice_notes_at_once_are_each_fetched_and_transcribed_once(
    transactional_db: Any,
    tmp_path: Path,
    tenant_a: Any,
    wa_binding: Any,
    fake_google: FakeGoogle,
    fake_graph: FakeGraph,
    client: Client,
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
    respond(fake_google, "Claro, ¿cuál es la nueva dirección y el teléfono?")
    env = worker_env(fake_google, fake_graph)
    with worker_running(tmp_path, pool=("-P", "threads", "-c", "4"), prefix="media2", **env):
        assert post(client, data).status_code == 200
        # both notes are one burst: one reply (ai_agents/conversations/burst.py)
        wait_until(lambda: len(fake_graph.sent) >= 1, what="the reply", timeout=60)
        time.sleep(1.5)  # a duplicate transcription (or reply) would have been recorded by now

    assert [b["text"]["body"] for b in fake_graph.sent] == [
        "Claro, ¿cuál es la nueva dirección y el teléfono?"
    ]

    # then: one lookup and one download per note, one transcription each
    paths = sorted(r.path for r in fake_graph.media_requests)
    expected = [
        f"{prefix}{media_id}"
        for media_id in (AUDIO_ID, "2277845126715925")
        for prefix in ("/v24.0/", "/media-download/")
    ]
    assert paths == sorted(expected)
    assert [r.success for r in usage_rows(tenant_a, "transcription")] == [True, True]
    assert [m.content for m in user_messages(tenant_a)] == [
        "Quiero cambiar la dirección de entrega",
        "Y también el teléfono de contacto",
    ]
