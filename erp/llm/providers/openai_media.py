"""Audio and images on OpenAI-compatible servers.

Audio goes to `/audio/transcriptions` (multipart: `file`, `model`; answer `{"text": ...}`), the
endpoint OpenAI, vLLM, LocalAI and llama.cpp-based servers share; images go to
`/chat/completions` as an `image_url` part with a data URL.
"""

from __future__ import annotations

import base64
import time
from typing import Any

from django.conf import settings

from erp.llm import errors
from erp.llm.types import LlmResult, MediaRequest

AUDIO_EXTENSIONS = {"audio/ogg": "ogg", "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/aac": "aac"}


def _json_body(response: Any, model: str) -> dict[str, Any]:
    from erp.llm.providers.openai_compat import _json_body as body_of

    return body_of(response, model)


def media_model(provider: Any, request: MediaRequest) -> str:
    if request.model:
        return request.model
    if request.task == "transcribe":
        return str(settings.OPENAI_TRANSCRIPTION_MODEL)
    return str(provider.default_model)


def media_text(provider: Any, request: MediaRequest) -> LlmResult:
    """`provider` is the `OpenAICompatProvider` (its base URL, key and session)."""
    started = time.monotonic()
    if request.task == "transcribe":
        model = media_model(provider, request)
        base_type = request.mime_type.split(";")[0].strip()
        name = f"audio.{AUDIO_EXTENSIONS.get(base_type, 'ogg')}"
        response = provider._post(
            "/audio/transcriptions",
            {"model": model},
            None,
            model=model,
            timeout_s=request.timeout_s,
            files={"file": (name, request.data, base_type)},
        )
        body = _json_body(response, model)
        text, usage = str(body.get("text") or ""), body.get("usage") or {}
    else:
        model = media_model(provider, request)
        url = f"data:{request.mime_type};base64,{base64.b64encode(request.data).decode()}"
        content = [
            {"type": "text", "text": request.prompt},
            {"type": "image_url", "image_url": {"url": url}},
        ]
        payload = {"model": model, "messages": [{"role": "user", "content": content}]}
        response = provider._post(
            "/chat/completions", payload, None, model=model, timeout_s=request.timeout_s
        )
        body = _json_body(response, model)
        choices = body.get("choices") or [{}]
        text = str((choices[0].get("message") or {}).get("content") or "")
        usage = body.get("usage") or {}
    if not text.strip():
        raise errors.Blocked("respuesta vacía", provider=provider.name, model=model)
    return LlmResult(
        text=text.strip(),
        parsed=None,
        finish_reason="stop",
        input_tokens=int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or usage.get("output_tokens") or 0),
        latency_ms=int((time.monotonic() - started) * 1000),
        provider=provider.name,
        model=model,
    )
