"""Voice notes and images through the gateway: `/audio/transcriptions` and an `image_url` part
on OpenAI-compatible servers (Gemini's inline audio is covered end to end by the WhatsApp media
tests), one usage row per attempt with the caller's operation, retries on 5xx, and the offline
provider refusing (the caller asks the customer to write)."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from erp.llm import errors, gateway
from erp.llm.models import UsageLog
from erp.llm.providers.offline import OfflineProvider
from erp.llm.providers.openai_compat import OpenAICompatProvider
from erp.llm.types import MediaRequest
from erp.tenancy.models import Tenant
from erp.testing.fake_openai import ChatReply, ErrorReply, FakeOpenAI

VOICE = b"OggS\x00\x02" + bytes(range(100))
PHOTO = b"\xff\xd8\xff\xe0" + bytes(50)
FAST = gateway.RetryPolicy(timeout_s=2.0, attempts=2, base_delay_s=0.01)


def _audio() -> MediaRequest:
    return MediaRequest(data=VOICE, mime_type="audio/ogg", task="transcribe", prompt="Transcribe")


def _context(tenant: Tenant, operation: str) -> gateway.CallContext:
    return gateway.CallContext(tenant=tenant, operation=operation)


def _rows(tenant: Tenant) -> list[tuple[str, bool, str]]:
    found = UsageLog.objects.for_tenant(tenant).order_by("created_at")
    return [(r.operation, r.success, r.model) for r in found]


@pytest.mark.django_db
def test_audio_goes_to_audio_transcriptions_with_a_usage_row(
    tenant_a: Tenant, fake_openai: FakeOpenAI
) -> None:
    fake_openai.transcription_script = [ErrorReply(503), "Quiero cambiar mi pedido"]

    result = gateway.llm_media_text(
        _audio(),
        context=_context(tenant_a, "transcription"),
        provider=OpenAICompatProvider.from_settings(),
        retry=FAST,
    )

    assert result.text == "Quiero cambiar mi pedido"
    [failed, ok] = fake_openai.transcription_requests
    assert VOICE in failed.body
    assert b'name="model"\r\n\r\nwhisper-1' in ok.body
    assert b'filename="audio.ogg"' in ok.body and VOICE in ok.body
    assert ok.header("authorization") == "Bearer sk-test-fake"
    assert _rows(tenant_a) == [
        ("transcription", False, "whisper-1"),
        ("transcription", True, "whisper-1"),
    ]


@pytest.mark.django_db
def test_an_image_goes_to_chat_completions_as_a_data_url(
    tenant_a: Tenant, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(ChatReply("Una bisagra rota", prompt_tokens=300, completion_tokens=5))
    request = MediaRequest(
        data=PHOTO, mime_type="image/jpeg", task="describe", prompt="Describe", model="gpt-4o"
    )

    result = gateway.llm_media_text(
        request,
        context=_context(tenant_a, "image_description"),
        provider=OpenAICompatProvider.from_settings(),
        retry=FAST,
    )

    assert (result.text, result.input_tokens, result.output_tokens) == ("Una bisagra rota", 300, 5)
    [sent] = fake_openai.chat_requests
    [part_text, part_image] = sent["messages"][0]["content"]
    assert part_text == {"type": "text", "text": "Describe"}
    url = "data:image/jpeg;base64," + base64.b64encode(PHOTO).decode()
    assert part_image == {"type": "image_url", "image_url": {"url": url}}
    assert _rows(tenant_a) == [("image_description", True, "gpt-4o")]


@pytest.mark.django_db
def test_a_permanent_error_is_not_retried(tenant_a: Tenant, fake_openai: FakeOpenAI) -> None:
    fake_openai.transcription_script = [ErrorReply(400, "bad audio"), "never"]

    with pytest.raises(errors.BadRequest):
        gateway.llm_media_text(
            _audio(),
            context=_context(tenant_a, "transcription"),
            provider=OpenAICompatProvider.from_settings(),
            retry=FAST,
        )

    assert len(fake_openai.transcription_requests) == 1
    assert _rows(tenant_a) == [("transcription", False, "whisper-1")]


@pytest.mark.django_db
def test_the_offline_provider_cannot_hear_audio(tenant_a: Tenant) -> None:
    with pytest.raises(errors.Unsupported):
        gateway.llm_media_text(
            dataclasses.replace(_audio()),
            context=_context(tenant_a, "transcription"),
            provider=OfflineProvider(),
            retry=FAST,
        )
