"""Google AI Studio (Generative Language API) through the google-genai SDK.

One `genai.Client` per (base URL, key, API version) for the whole process, kept referenced
(a collected Client closes its shared HTTP connection pool). The SDK's own retries are off:
the gateway retries, and every attempt must be one ledger row.

Models that reject system instructions (Gemma 3 answered 400 "Developer instruction is not
enabled") get the system text folded into the first user turn; that is remembered per model
for the life of the process.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx2
from django.conf import settings
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from erp.llm.errors import (
    AuthFailed,
    BadRequest,
    Blocked,
    LlmError,
    NotConfigured,
    RateLimited,
    Timeout,
    Unavailable,
)
from erp.llm.providers.google_request import (
    gemini_config,
    gemini_contents,
    gemini_media_config,
    gemini_media_contents,
)
from erp.llm.types import (
    EmbeddingResult,
    EmbeddingTask,
    LlmRequest,
    LlmResult,
    MediaRequest,
    TextDelta,
)

logger = logging.getLogger(__name__)

EMBEDDING_MODEL = "gemini-embedding-001"
EMBED_BATCH = 100  # batchEmbedContents accepts at most 100 requests
_NO_SYSTEM_MARKER = "developer instruction is not enabled"
_BLOCKING_FINISH = frozenset(
    {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}
)
_EMBED_TASKS = {"query": "RETRIEVAL_QUERY", "passage": "RETRIEVAL_DOCUMENT"}

_clients: dict[tuple[str, str, str], genai.Client] = {}
_clients_lock = threading.Lock()
_models_without_system: set[str] = set()


def reset_state() -> None:
    """Forget the per-model system-instruction fallback (tests)."""
    _models_without_system.clear()


def _client(base_url: str, api_key: str, api_version: str) -> genai.Client:
    key = (base_url, api_key, api_version)
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = genai.Client(
                    api_key=api_key,
                    http_options=types.HttpOptions(
                        base_url=base_url,
                        api_version=api_version,
                        retry_options=types.HttpRetryOptions(attempts=1),
                    ),
                )
                _clients[key] = client
    return client


# --- errors -------------------------------------------------------------------------------

_DELAY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)s\s*$")


def _retry_delay(details: Any) -> float | None:
    """Seconds from a google.rpc.RetryInfo `retryDelay` ("37s", "0.2s") in the error body."""
    error = details.get("error", details) if isinstance(details, dict) else {}
    for item in error.get("details") or [] if isinstance(error, dict) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            match = _DELAY_RE.match(str(item.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _error_reasons(details: Any) -> set[str]:
    error = details.get("error", details) if isinstance(details, dict) else {}
    items = error.get("details") or [] if isinstance(error, dict) else []
    return {str(i.get("reason")) for i in items if isinstance(i, dict) and i.get("reason")}


def map_error(exc: Exception, *, model: str) -> LlmError:
    """Our taxonomy from an SDK or transport exception (messages carry no secrets)."""
    kw = {"provider": GoogleProvider.name, "model": model}
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 0)
        message = f"{code} {exc.status or ''}: {exc.message or ''}".strip()
        if code == 429:
            return RateLimited(message, retry_after=_retry_delay(exc.details), **kw)
        if code in (401, 403) or "API_KEY_INVALID" in _error_reasons(exc.details):
            return AuthFailed(message, **kw)
        if code == 408:
            return Timeout(message, **kw)
        if 400 <= code < 500:
            return BadRequest(message, **kw)
        return Unavailable(message, **kw)
    if isinstance(exc, httpx2.TimeoutException):
        return Timeout(f"sin respuesta a tiempo ({type(exc).__name__})", **kw)
    if isinstance(exc, httpx2.HTTPError):
        return Unavailable(f"{type(exc).__name__}: {exc}", **kw)
    if isinstance(exc, genai_errors.UnknownApiResponseError):
        return Unavailable(f"respuesta ilegible: {exc}", **kw)
    raise exc


def _is_no_system_error(exc: Exception) -> bool:
    return (
        isinstance(exc, genai_errors.ClientError)
        and exc.code == 400
        and _NO_SYSTEM_MARKER in str(exc.message or "").lower()
    )


# --- responses ----------------------------------------------------------------------------


def _enum_name(value: Any) -> str:
    if value is None:
        return ""
    return str(getattr(value, "name", value))


def _check_prompt_blocked(response: types.GenerateContentResponse, model: str) -> None:
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason:
        raise Blocked(
            f"prompt bloqueado: {_enum_name(feedback.block_reason)}",
            provider=GoogleProvider.name,
            model=model,
        )


def _candidate_text(candidate: types.Candidate) -> str:
    content = candidate.content
    if content is None or not content.parts:
        return ""
    return "".join(p.text for p in content.parts if p.text and not p.thought)


def _finish_reason(raw: str) -> str:
    if raw == "MAX_TOKENS":
        return "max_tokens"
    if raw in ("STOP", ""):
        return "stop"
    return "other"


def _usage(response: types.GenerateContentResponse | None) -> tuple[int, int, int]:
    usage = response.usage_metadata if response is not None else None
    if usage is None:
        return 0, 0, 0
    thoughts = usage.thoughts_token_count or 0
    return (
        usage.prompt_token_count or 0,
        (usage.candidates_token_count or 0) + thoughts,  # thinking is billed as output
        thoughts,
    )


def _parse_json(text: str, request: LlmRequest) -> Any | None:
    if request.json_schema is None or not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# --- provider -----------------------------------------------------------------------------


class GoogleProvider:
    name = "google"

    def __init__(
        self, *, api_key: str, base_url: str, default_model: str, api_version: str = "v1beta"
    ) -> None:
        self.default_model = default_model
        self._client = _client(base_url, api_key, api_version)

    @classmethod
    def from_settings(cls) -> GoogleProvider:
        key = settings.GOOGLE_AI_API_KEY
        if not key:
            raise NotConfigured("GOOGLE_AI_API_KEY no está configurada", provider=cls.name)
        return cls(
            api_key=key,
            base_url=settings.GOOGLE_AI_BASE_URL,
            default_model=settings.LLM_DEFAULT_MODEL,
            api_version=settings.GOOGLE_AI_API_VERSION or "v1beta",
        )

    # generation ------------------------------------------------------------------------
    def _prepare(
        self, request: LlmRequest, model: str
    ) -> tuple[list[types.Content], types.GenerateContentConfig, bool]:
        with_system = bool(request.system) and model not in _models_without_system
        fold = request.system if request.system and not with_system else ""
        return (
            gemini_contents(request.messages, fold),
            gemini_config(request, with_system=with_system),
            with_system,
        )

    def _remember_no_system(self, model: str) -> None:
        logger.info("llm.google.system_instruction_fallback", extra={"model": model})
        _models_without_system.add(model)

    def generate(self, request: LlmRequest) -> LlmResult:
        model = request.model or self.default_model
        started = time.monotonic()
        contents, config, with_system = self._prepare(request, model)
        try:
            try:
                response = self._client.models.generate_content(
                    model=model, contents=contents, config=config
                )
            except genai_errors.ClientError as exc:
                if not (with_system and _is_no_system_error(exc)):
                    raise
                self._remember_no_system(model)
                contents, config, _ = self._prepare(request, model)
                response = self._client.models.generate_content(
                    model=model, contents=contents, config=config
                )
        except Exception as exc:
            raise map_error(exc, model=model) from exc
        _check_prompt_blocked(response, model)
        if not response.candidates:
            raise Blocked("respuesta vacía (sin candidatos)", provider=self.name, model=model)
        candidate = response.candidates[0]
        raw_finish = _enum_name(candidate.finish_reason)
        if raw_finish in _BLOCKING_FINISH:
            raise Blocked(f"respuesta bloqueada: {raw_finish}", provider=self.name, model=model)
        text = _candidate_text(candidate)
        input_tokens, output_tokens, thoughts = _usage(response)
        return LlmResult(
            text=text,
            parsed=_parse_json(text, request),
            finish_reason=_finish_reason(raw_finish),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_ms=int((time.monotonic() - started) * 1000),
            provider=self.name,
            model=model,
            metadata={"thoughts_tokens": thoughts, "model_version": response.model_version},
        )

    def _open_stream(
        self, request: LlmRequest, model: str
    ) -> tuple[Iterator[types.GenerateContentResponse], types.GenerateContentResponse | None]:
        """The stream and its first chunk (the HTTP request happens on the first `next`)."""
        contents, config, with_system = self._prepare(request, model)
        stream = self._client.models.generate_content_stream(
            model=model, contents=contents, config=config
        )
        try:
            return stream, next(stream, None)
        except genai_errors.ClientError as exc:
            if not (with_system and _is_no_system_error(exc)):
                raise
        self._remember_no_system(model)
        contents, config, _ = self._prepare(request, model)
        stream = self._client.models.generate_content_stream(
            model=model, contents=contents, config=config
        )
        return stream, next(stream, None)

    def stream(self, request: LlmRequest) -> Iterator[TextDelta | LlmResult]:
        model = request.model or self.default_model
        started = time.monotonic()
        parts: list[str] = []
        raw_finish = ""
        last: types.GenerateContentResponse | None = None
        usage_seen: types.GenerateContentResponse | None = None
        saw_candidate = False
        try:
            stream, chunk = self._open_stream(request, model)
            while chunk is not None:
                last = chunk
                if chunk.usage_metadata is not None:
                    usage_seen = chunk
                _check_prompt_blocked(chunk, model)
                if chunk.candidates:
                    saw_candidate = True
                    candidate = chunk.candidates[0]
                    if candidate.finish_reason is not None:
                        raw_finish = _enum_name(candidate.finish_reason)
                    if raw_finish in _BLOCKING_FINISH:
                        raise Blocked(
                            f"respuesta bloqueada: {raw_finish}", provider=self.name, model=model
                        )
                    delta = _candidate_text(candidate)
                    if delta:
                        parts.append(delta)
                        yield TextDelta(delta)
                chunk = next(stream, None)
        except LlmError:
            raise
        except Exception as exc:
            raise map_error(exc, model=model) from exc
        if not saw_candidate:
            raise Blocked("respuesta vacía (sin candidatos)", provider=self.name, model=model)
        text = "".join(parts)
        input_tokens, output_tokens, thoughts = _usage(usage_seen)
        yield LlmResult(
            text=text,
            parsed=_parse_json(text, request),
            finish_reason=_finish_reason(raw_finish),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_ms=int((time.monotonic() - started) * 1000),
            provider=self.name,
            model=model,
            metadata={
                "thoughts_tokens": thoughts,
                "model_version": last.model_version if last is not None else None,
            },
        )

    # audio and images --------------------------------------------------------------------
    def media_model(self, request: MediaRequest) -> str:
        return request.model or self.default_model

    def media_text(self, request: MediaRequest) -> LlmResult:
        """Gemini audio/image input: the bytes inline beside the instruction."""
        model = self.media_model(request)
        started = time.monotonic()
        config = gemini_media_config(request)
        try:
            response = self._client.models.generate_content(
                model=model, contents=gemini_media_contents(request), config=config
            )
        except Exception as exc:
            raise map_error(exc, model=model) from exc
        _check_prompt_blocked(response, model)
        text = _candidate_text(response.candidates[0]).strip() if response.candidates else ""
        if not text:
            raise Blocked(
                "respuesta vacía para el audio o la imagen", provider=self.name, model=model
            )
        input_tokens, output_tokens, _thoughts = _usage(response)
        return LlmResult(
            text=text,
            parsed=None,
            finish_reason="stop",
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_ms=int((time.monotonic() - started) * 1000),
            provider=self.name,
            model=model,
        )

    # embeddings ------------------------------------------------------------------------
    def embed(
        self,
        texts: Sequence[str],
        *,
        model: str = EMBEDDING_MODEL,
        dimensions: int | None = None,
        task: EmbeddingTask = "passage",
        timeout_s: float = 30.0,
    ) -> EmbeddingResult:
        started = time.monotonic()
        config = types.EmbedContentConfig(
            task_type=_EMBED_TASKS[task],
            output_dimensionality=dimensions,
            http_options=types.HttpOptions(timeout=max(1, math.ceil(timeout_s * 1000))),
        )
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = list(texts[start : start + EMBED_BATCH])
            try:
                response = self._client.models.embed_content(
                    model=model,
                    contents=batch,
                    config=config,
                )
            except Exception as exc:
                raise map_error(exc, model=model) from exc
            embeddings = response.embeddings or []
            if len(embeddings) != len(batch):
                raise Unavailable(
                    f"{len(embeddings)} vectores para {len(batch)} textos",
                    provider=self.name,
                    model=model,
                )
            vectors.extend(list(e.values or []) for e in embeddings)
        # batchEmbedContents reports no token counts: estimate ~4 characters per token.
        estimated = sum(math.ceil(len(t) / 4) for t in texts)
        return EmbeddingResult(
            vectors=vectors,
            input_tokens=estimated,
            latency_ms=int((time.monotonic() - started) * 1000),
            provider=self.name,
            model=model,
        )
