"""OpenAI-compatible chat completions and embeddings over plain HTTP.

Speaks the wire format Ollama, vLLM, llama.cpp's `llama-server` and OpenAI share
(`/chat/completions`, `/embeddings`). Constrained decoding uses `response_format` with a
`json_schema`; streaming asks for `stream_options.include_usage` so the last chunk (with
empty `choices`) carries the token counts.

One `requests.Session` per process (connection pooling); the provider object itself is
cheap and reads its base URL, key and model from settings in `from_settings()`, so a
settings change (tests, reconfiguration) takes effect on the next call.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import requests
from django.conf import settings
from urllib3.exceptions import ReadTimeoutError

from erp.llm import errors
from erp.llm.providers import openai_media
from erp.llm.types import (
    EmbeddingResult,
    EmbeddingTask,
    LlmRequest,
    LlmResult,
    MediaRequest,
    Message,
    TextDelta,
)

logger = logging.getLogger(__name__)

PROVIDER_NAME = "openai"
CONNECT_TIMEOUT_S = 5.0
TOOL_RESULT_PREFIX = "Resultado de la herramienta"
_FINISH = {"stop": "stop", "length": "max_tokens", "tool_calls": "other", "function_call": "other"}

_session: requests.Session | None = None
_session_pid: int | None = None
_session_lock = threading.Lock()


def http_session() -> requests.Session:
    """The process's pooled session (recreated after a fork: pools must not be shared)."""
    global _session, _session_pid
    pid = os.getpid()
    if _session is None or _session_pid != pid:
        with _session_lock:
            if _session is None or _session_pid != pid:
                session = requests.Session()
                session.trust_env = False  # base URL is a setting; no proxy surprises
                _session, _session_pid = session, pid
    return _session


class OpenAICompatProvider:
    name = PROVIDER_NAME

    def __init__(
        self,
        *,
        base_url: str,
        default_model: str,
        api_key: str | None = None,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.default_model = default_model
        self._api_key = api_key
        self._session = session

    @classmethod
    def from_settings(cls) -> OpenAICompatProvider:
        base_url = getattr(settings, "OPENAI_BASE_URL", None)
        if not base_url:
            raise errors.NotConfigured("OPENAI_BASE_URL is not set", provider=PROVIDER_NAME)
        model = getattr(settings, "OPENAI_DEFAULT_MODEL", None) or settings.LLM_DEFAULT_MODEL
        return cls(
            base_url=base_url,
            api_key=getattr(settings, "OPENAI_API_KEY", None),
            default_model=model,
        )

    # --- chat ---------------------------------------------------------------------------
    def generate(self, request: LlmRequest) -> LlmResult:
        model = request.model or self.default_model
        started = time.monotonic()
        response = self._post("/chat/completions", self._chat_payload(request, model), request)
        body = _json_body(response, model)
        choices = body.get("choices") or []
        if not choices:
            raise errors.Unavailable("respuesta sin choices", provider=self.name, model=model)
        choice = choices[0]
        text = (choice.get("message") or {}).get("content") or ""
        finish = self._finish(choice.get("finish_reason"), model)
        usage = body.get("usage") or {}
        return self._result(
            request, text, finish, usage, model=model, served=body.get("model"), started=started
        )

    def media_model(self, request: MediaRequest) -> str:
        return openai_media.media_model(self, request)

    def media_text(self, request: MediaRequest) -> LlmResult:
        return openai_media.media_text(self, request)

    def stream(self, request: LlmRequest) -> Iterator[TextDelta | LlmResult]:
        model = request.model or self.default_model
        payload = self._chat_payload(request, model)
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
        started = time.monotonic()
        response = self._post("/chat/completions", payload, request, stream=True)
        parts: list[str] = []
        usage: dict[str, Any] = {}
        finish_raw: str | None = None
        served_model: str | None = None
        done = False
        try:
            for data in _sse_data(response, self.name, model):
                if data == "[DONE]":
                    done = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise errors.Unavailable(
                        "fragmento de stream no es JSON", provider=self.name, model=model
                    ) from None
                if chunk.get("error"):
                    raise errors.Unavailable(
                        _error_text(chunk["error"]), provider=self.name, model=model
                    )
                served_model = chunk.get("model") or served_model
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        parts.append(piece)
                        yield TextDelta(piece)
                    finish_raw = choice.get("finish_reason") or finish_raw
        finally:
            response.close()
        if not done and finish_raw is None:
            raise errors.Unavailable(
                "el stream terminó antes de tiempo", provider=self.name, model=model
            )
        finish = self._finish(finish_raw, model)
        yield self._result(
            request,
            "".join(parts),
            finish,
            usage,
            model=model,
            served=served_model,
            started=started,
        )

    # --- embeddings ---------------------------------------------------------------------
    def embed(
        self,
        texts: Sequence[str],
        *,
        model: str,
        dimensions: int | None,
        task: EmbeddingTask,
        timeout_s: float = 30.0,
    ) -> EmbeddingResult:
        # `task` has no OpenAI equivalent; models that need prefixes get them from the caller.
        payload: dict[str, Any] = {"model": model, "input": list(texts)}
        if dimensions:
            payload["dimensions"] = dimensions
        started = time.monotonic()
        response = self._post("/embeddings", payload, None, model=model, timeout_s=timeout_s)
        body = _json_body(response, model)
        rows = sorted(body.get("data") or [], key=lambda row: row.get("index", 0))
        vectors = [list(map(float, row["embedding"])) for row in rows]
        if len(vectors) != len(texts):
            raise errors.Unavailable(
                f"{len(vectors)} vectores para {len(texts)} textos", provider=self.name, model=model
            )
        usage = body.get("usage") or {}
        return EmbeddingResult(
            vectors=vectors,
            input_tokens=int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0),
            latency_ms=_ms_since(started),
            provider=self.name,
            model=model,
        )

    # --- internals ----------------------------------------------------------------------
    def _chat_payload(self, request: LlmRequest, model: str) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": model, "messages": chat_messages(request)}
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.top_k is not None:
            payload["top_k"] = request.top_k  # non-standard; vLLM and llama.cpp accept it
        if request.max_output_tokens is not None:
            payload["max_tokens"] = request.max_output_tokens
        if request.json_schema is not None:
            schema = json_schema_lower(request.json_schema)
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "action", "strict": strict_ok(schema), "schema": schema},
            }
        return payload

    def _post(
        self,
        path: str,
        payload: dict[str, Any],
        request: LlmRequest | None,
        *,
        stream: bool = False,
        model: str = "",
        timeout_s: float | None = None,
        files: dict[str, Any] | None = None,  # multipart (payload as form fields)
    ) -> requests.Response:
        model = model or str(payload.get("model", ""))
        body: dict[str, Any] = (
            {"json": payload} if files is None else {"data": payload, "files": files}
        )
        timeout = timeout_s if timeout_s is not None else (request.timeout_s if request else 30.0)
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        session = self._session or http_session()
        try:
            response = session.post(
                self.base_url + path,
                headers=headers,
                timeout=(min(CONNECT_TIMEOUT_S, timeout), timeout),
                stream=stream,
                allow_redirects=False,
                **body,
            )
        except requests.exceptions.Timeout as exc:  # ConnectTimeout and ReadTimeout
            raise errors.Timeout(
                f"sin respuesta en {timeout:g} s", provider=self.name, model=model
            ) from exc
        except requests.exceptions.RequestException as exc:
            raise errors.Unavailable(
                f"conexión fallida: {type(exc).__name__}", provider=self.name, model=model
            ) from exc
        if response.status_code >= 300:
            try:
                raise status_error(response, provider=self.name, model=model)
            finally:
                response.close()
        return response

    def _finish(self, raw: str | None, model: str) -> str:
        if raw == "content_filter":
            raise errors.Blocked(
                "el proveedor bloqueó la respuesta (content_filter)",
                provider=self.name,
                model=model,
            )
        return _FINISH.get(raw or "stop", "other")

    def _result(
        self,
        request: LlmRequest,
        text: str,
        finish: str,
        usage: dict[str, Any],
        *,
        model: str,
        served: str | None,
        started: float,
    ) -> LlmResult:
        # `model` stays the requested name (prices and the ledger key on it); servers often
        # answer with a dated or tagged variant, kept in metadata.
        parsed: Any | None = None
        metadata: dict[str, Any] = {"served_model": served} if served and served != model else {}
        if request.json_schema is not None:
            try:
                parsed = json.loads(text)
            except ValueError:
                metadata["json_invalid"] = True
        if not usage:
            metadata["usage_missing"] = True
        return LlmResult(
            text=text,
            parsed=parsed,
            finish_reason=finish,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            latency_ms=_ms_since(started),
            provider=self.name,
            model=model,
            metadata=metadata,
        )


# --- pure helpers (tested directly) ---------------------------------------------------------
def chat_messages(request: LlmRequest) -> list[dict[str, str]]:
    """System first; tool results folded into user text (we use JSON actions, not tool calls).

    Consecutive turns of the same role are merged: several chat templates (Gemma's among
    them) reject two user turns in a row.
    """
    out: list[dict[str, str]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        role, content = _wire_turn(message)
        if out and out[-1]["role"] == role and role != "system":
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    return out


def _wire_turn(message: Message) -> tuple[str, str]:
    if message.role == "tool":
        label = f"{TOOL_RESULT_PREFIX} {message.name}" if message.name else TOOL_RESULT_PREFIX
        return "user", f"{label}:\n{message.content}"
    return message.role, message.content


def json_schema_lower(schema: Any) -> Any:
    """OpenAPI-style schema (Gemini's `"type": "OBJECT"`, `nullable`) -> plain JSON Schema.

    Objects get `additionalProperties: false` (OpenAI's strict mode requires it; local
    servers build the same grammar either way) and Gemini-only keys are dropped.
    """
    if isinstance(schema, list):
        return [json_schema_lower(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in {"propertyOrdering", "property_ordering", "nullable"}:
            continue
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "type" and isinstance(value, list):
            out[key] = [v.lower() if isinstance(v, str) else v for v in value]
        elif key in {"properties", "$defs", "definitions"} and isinstance(value, dict):
            out[key] = {name: json_schema_lower(sub) for name, sub in value.items()}
        elif key in {"items", "anyOf", "oneOf", "allOf", "not", "additionalProperties"}:
            out[key] = json_schema_lower(value)
        else:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def strict_ok(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts the schema: it requires every property of every
    object to be listed in `required` (ours leave per-action arguments optional). Ollama,
    vLLM and llama.cpp ignore the flag and constrain decoding with the schema either way."""
    if isinstance(schema, list):
        return all(strict_ok(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if isinstance(properties, dict) and set(properties) - set(schema.get("required") or []):
        return False
    return all(strict_ok(value) for key, value in schema.items() if key != "enum")


def status_error(response: requests.Response, *, provider: str, model: str) -> errors.LlmError:
    status = response.status_code
    try:
        detail = _error_text(response.json().get("error"))
    except (ValueError, AttributeError):
        detail = response.text[:300]
    message = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    kw = {"provider": provider, "model": model}
    if status == 429:
        return errors.RateLimited(
            message, retry_after=retry_after_seconds(response.headers.get("Retry-After")), **kw
        )
    if status in (401, 403):
        return errors.AuthFailed(message, **kw)
    if status == 408:
        return errors.Timeout(message, **kw)
    if status < 500:
        if "content_filter" in detail:
            return errors.Blocked(message, **kw)
        return errors.BadRequest(message, **kw)
    return errors.Unavailable(message, **kw)


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        parts = [str(error.get(k)) for k in ("code", "type", "message") if error.get(k)]
        return " ".join(parts)[:300]
    return str(error or "")[:300]


def _json_body(response: requests.Response, model: str) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise errors.Unavailable(
            "respuesta no es JSON", provider=PROVIDER_NAME, model=model
        ) from None
    if not isinstance(body, dict):
        raise errors.Unavailable("respuesta inesperada", provider=PROVIDER_NAME, model=model)
    return body


def _sse_data(response: requests.Response, provider: str, model: str) -> Iterator[str]:
    """The `data:` payloads of an SSE body; read timeouts and resets become typed errors."""
    try:
        for line in response.iter_lines(decode_unicode=True):
            if line and line.startswith("data:"):
                yield line[5:].strip()
    except requests.exceptions.RequestException as exc:
        # While streaming, requests wraps urllib3's ReadTimeoutError in a ConnectionError.
        reason = exc.args[0] if exc.args else None
        if isinstance(exc, requests.exceptions.Timeout) or isinstance(reason, ReadTimeoutError):
            raise errors.Timeout(
                "el stream dejó de llegar", provider=provider, model=model
            ) from exc
        raise errors.Unavailable("el stream se cortó", provider=provider, model=model) from exc


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
