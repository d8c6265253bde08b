"""Audio and images on OpenAI-compatible servers.

Audio goes to `/audio/transcriptions` (multipart: `file`, `model`; answer `{"text": ...}`), the
endpoint OpenAI, vLLM, LocalAI and llama.cpp-based servers share; images go to
`/chat/completions` as an `image_url` part with a data URL.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import requests
from django.conf import settings

from erp.llm import errors
from erp.llm.types import LlmResult, MediaRequest

AUDIO_EXTENSIONS = {"audio/ogg": "ogg", "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/aac": "aac"}


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
        body = _post(
            provider,
            "/audio/transcriptions",
            model=model,
            timeout_s=request.timeout_s,
            files={"file": (name, request.data, base_type)},
            data={"model": model},
        )
        text, usage = str(body.get("text") or ""), body.get("usage") or {}
    else:
        model = media_model(provider, request)
        url = f"data:{request.mime_type};base64,{base64.b64encode(request.data).decode()}"
        content = [
            {"type": "text", "text": request.prompt},
            {"type": "image_url", "image_url": {"url": url}},
        ]
        body = _post(
            provider,
            "/chat/completions",
            model=model,
            timeout_s=request.timeout_s,
            json={"model": model, "messages": [{"role": "user", "content": content}]},
        )
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


def _post(provider: Any, path: str, *, model: str, timeout_s: float, **kw: Any) -> dict[str, Any]:
    from erp.llm.providers.openai_compat import CONNECT_TIMEOUT_S, http_session, status_error

    headers = {"Accept": "application/json"}
    if provider._api_key:
        headers["Authorization"] = f"Bearer {provider._api_key}"
    session = provider._session or http_session()
    try:
        response = session.post(
            provider.base_url + path,
            headers=headers,
            timeout=(min(CONNECT_TIMEOUT_S, timeout_s), timeout_s),
            allow_redirects=False,
            **kw,
        )
    except requests.exceptions.Timeout as exc:
        raise errors.Timeout(
            f"sin respuesta en {timeout_s:g} s", provider=provider.name, model=model
        ) from exc
    except requests.exceptions.RequestException as exc:
        raise errors.Unavailable(
            f"conexión fallida: {type(exc).__name__}", provider=provider.name, model=model
        ) from exc
    if response.status_code >= 300:
        raise status_error(response, provider=provider.name, model=model)
    try:
        body = response.json()
    except ValueError as exc:
        raise errors.Unavailable("respuesta ilegible", provider=provider.name, model=model) from exc
    return body if isinstance(body, dict) else {}
