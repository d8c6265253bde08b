"""The one way the apps call a model: credits, retries, deadline and the usage ledger.

    result = llm_generate(request, context=CallContext(tenant=tenant), retry=AGENTS)

Every attempt, successful or not, writes one `UsageLog` row (and debits the tenant's credit
in the same SQL statement). Only retryable errors (`Timeout`, `Unavailable`, `RateLimited`)
are retried, with exponential backoff, honouring the provider's retry delay up to
`max_delay_s`; a total deadline bounds all attempts and shortens the last one. Streams retry
only until their first delta has been yielded.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings

from erp.db import connection_release
from erp.llm import usage
from erp.llm.budget import budget_request
from erp.llm.errors import LlmError, NoCredits, NotConfigured, RateLimited, Timeout, Unavailable
from erp.llm.models import Operation
from erp.llm.types import (
    EmbeddingProvider,
    EmbeddingResult,
    EmbeddingTask,
    LlmRequest,
    LlmResult,
    MediaProvider,
    MediaRequest,
    Provider,
    TextDelta,
)
from erp.retry import Attempts, Backoff
from erp.tenancy.models import Tenant

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

PROVIDERS: dict[str, str] = {
    "google": "erp.llm.providers.google.GoogleProvider",
    "openai": "erp.llm.providers.openai_compat.OpenAICompatProvider",
    "offline": "erp.llm.providers.offline.OfflineProvider",
}
MIN_ATTEMPT_S = 0.05  # an attempt shorter than this is not worth starting


@dataclass(frozen=True)
class RetryPolicy:
    """How the gateway retries. Its `timeout_s` replaces the request's for each attempt."""

    timeout_s: float = 30.0  # per attempt
    attempts: int = 4  # total, the first included
    base_delay_s: float = 1.0
    factor: float = 2.0
    max_delay_s: float = 10.0  # cap for backoff and for a server's retry delay
    deadline_s: float | None = None  # bounds all attempts and waits

    @property
    def backoff(self) -> Backoff:
        """The waits between attempts; a provider's retry delay is capped like the backoff."""
        return Backoff(
            attempts=self.attempts,
            base_delay_s=self.base_delay_s,
            factor=self.factor,
            max_delay_s=self.max_delay_s,
            max_retry_after_s=self.max_delay_s,
        )


# Agents (RN-3): 30 s per call, 3 retries, 1 s base, factor 2, 45 s in total.
AGENTS = RetryPolicy(timeout_s=30.0, attempts=4, base_delay_s=1.0, factor=2.0, deadline_s=45.0)
# Voice notes and images: 60 s per attempt, 2 attempts, 90 s in all (then "please write").
MEDIA = RetryPolicy(timeout_s=60.0, attempts=2, base_delay_s=1.0, factor=2.0, deadline_s=90.0)
# Correo: 40 s per attempt, at most 2 attempts (AI Studio cold starts).
CORREO = RetryPolicy(timeout_s=40.0, attempts=2, base_delay_s=1.0, factor=2.0, deadline_s=85.0)


@dataclass(frozen=True)
class CallContext:
    tenant: Tenant
    operation: str = Operation.LLM_REQUEST.value
    agent_id: uuid.UUID | None = None
    conversation_id: uuid.UUID | None = None
    message_id: uuid.UUID | None = None


# --- providers ----------------------------------------------------------------------------

_classes: dict[str, Any] = {}


def _provider_class(name: str) -> Any:
    cls = _classes.get(name)
    if cls is None:
        try:
            dotted = PROVIDERS[name]
        except KeyError:
            raise NotConfigured(f"proveedor desconocido: {name}", provider=name) from None
        module, _, attr = dotted.rpartition(".")
        cls = _classes[name] = getattr(importlib.import_module(module), attr)
    return cls


def default_provider_name() -> str:
    if settings.GOOGLE_AI_API_KEY:
        return "google"
    if settings.OPENAI_BASE_URL:
        return "openai"
    return "offline"


def get_provider(name: str | None = None) -> Provider:
    """The provider `name` ("google", "openai", "offline") built from settings, or the
    configured default. Raises NotConfigured when it lacks its settings."""
    return _provider_class(name or default_provider_name()).from_settings()


# --- calls --------------------------------------------------------------------------------


def _model_of(provider: Provider, request: LlmRequest) -> str:
    return request.model or getattr(provider, "default_model", "") or ""


def _record(
    context: CallContext,
    *,
    provider: str,
    model: str,
    started: float,
    result: LlmResult | None = None,
    error: BaseException | None = None,
) -> None:
    usage.usage_record(
        tenant=context.tenant,
        operation=context.operation,
        provider=provider,
        model=result.model if result is not None else model,
        input_tokens=result.input_tokens if result is not None else 0,
        output_tokens=result.output_tokens if result is not None else 0,
        latency_ms=int((time.monotonic() - started) * 1000),
        success=error is None,
        error_message=f"{type(error).__name__}: {error}" if error is not None else "",
        agent_id=context.agent_id,
        conversation_id=context.conversation_id,
        message_id=context.message_id,
    )
    connection_release()  # before a retry's wait or the next attempt


def _ensure_credits(context: CallContext, provider: str, model: str) -> None:
    """Refuses calls once the tenant's balance is spent, except the offline provider's: it calls
    nothing and costs nothing, so an agent without credits still answers its fallback flow."""
    if provider == "offline":
        return
    try:
        usage.credits_ensure(tenant=context.tenant)
    except NoCredits as exc:
        _record(context, provider=provider, model=model, started=time.monotonic(), error=exc)
        raise NoCredits(str(exc), provider=provider, model=model) from None
    connection_release()  # the model call that follows must not pin a pooled connection


class _Attempts:
    """The retry loop's bookkeeping (`erp.retry.Attempts`) plus each attempt's request, its
    timeout cut to the total deadline."""

    def __init__(self, policy: RetryPolicy, request: LlmRequest) -> None:
        self.policy = policy
        self.request = request
        # 0 (a budget already spent) is a deadline too: no attempt, not an unbounded one.
        self.loop = Attempts(policy.backoff, deadline_s=policy.deadline_s)

    @property
    def number(self) -> int:
        return self.loop.number

    def next_request(self) -> LlmRequest | None:
        """The request for the next attempt (timeout cut to the deadline), or None if no
        time is left."""
        timeout = self.policy.timeout_s
        remaining = self.loop.remaining_s()
        if remaining is not None:
            timeout = min(timeout, remaining)
            if timeout < MIN_ATTEMPT_S:
                return None
        self.loop.begin()
        if timeout == self.request.timeout_s:
            return self.request
        return dataclasses.replace(self.request, timeout_s=timeout)

    def wait_before_retry(self, error: LlmError) -> bool:
        """Sleep before another attempt; False when the error or the budget says stop."""
        retry_after = error.retry_after if isinstance(error, RateLimited) else None
        wait = self.loop.retry_wait(
            retryable=error.retryable, retry_after=retry_after, reserve_s=MIN_ATTEMPT_S
        )
        if wait is None:
            return False
        self.loop.pause(wait)
        return True


def _attempted(
    attempts: _Attempts,
    call: Callable[[LlmRequest], _T],
    *,
    context: CallContext,
    provider: str,
    model: str,
    log_failures: bool = False,
) -> tuple[_T, float]:
    """`call` on each attempt's request until one returns: (its result, when it started).
    Each failure is recorded (and logged with `log_failures`), then retried while the error
    and the time left allow; otherwise the last `LlmError` is raised."""
    last_error: LlmError | None = None
    while True:
        attempt = attempts.next_request()
        if attempt is None:
            raise last_error or _out_of_time(provider, model)
        started = time.monotonic()
        try:
            return call(attempt), started
        except LlmError as exc:
            _record(context, provider=provider, model=model, started=started, error=exc)
            if log_failures:
                _log_failure(exc, attempts, provider, model)
            last_error = exc
            if not attempts.wait_before_retry(exc):
                raise


def llm_generate(
    request: LlmRequest,
    *,
    context: CallContext,
    provider: Provider | None = None,
    retry: RetryPolicy = AGENTS,
) -> LlmResult:
    """One answer from the model, with retries; raises the last `LlmError` on failure."""
    provider = provider or get_provider()
    request = budget_request(request, tenant=context.tenant, provider=provider.name)
    model = _model_of(provider, request)
    _ensure_credits(context, provider.name, model)
    result, started = _attempted(
        _Attempts(retry, request),
        provider.generate,
        context=context,
        provider=provider.name,
        model=model,
        log_failures=True,
    )
    _record(context, provider=provider.name, model=model, started=started, result=result)
    return result


def llm_stream(
    request: LlmRequest,
    *,
    context: CallContext,
    provider: Provider | None = None,
    retry: RetryPolicy = AGENTS,
) -> Iterator[TextDelta | LlmResult]:
    """Text deltas as they arrive, then the `LlmResult`. Failures before the first delta are
    retried like `llm_generate`; after it they are raised (the caller has shown text)."""
    provider = provider or get_provider()
    request = budget_request(request, tenant=context.tenant, provider=provider.name)
    model = _model_of(provider, request)
    _ensure_credits(context, provider.name, model)
    attempts = _Attempts(retry, request)
    last_error: LlmError | None = None
    while True:
        attempt_request = attempts.next_request()
        if attempt_request is None:
            raise last_error or _out_of_time(provider.name, model)
        started = time.monotonic()
        ends = started + attempt_request.timeout_s
        yielded = recorded = False
        events = provider.stream(attempt_request)
        try:
            for event in _until_result(events, ends=ends, provider=provider.name, model=model):
                if isinstance(event, LlmResult):
                    recorded = True
                    _record(
                        context, provider=provider.name, model=model, started=started, result=event
                    )
                    yield event
                    return
                yielded = True
                yield event
        except LlmError as exc:
            recorded = True
            _record(context, provider=provider.name, model=model, started=started, error=exc)
            _log_failure(exc, attempts, provider.name, model)
            last_error = exc
            if yielded or not attempts.wait_before_retry(exc):
                raise
        finally:
            if not recorded:  # the caller stopped reading: the attempt still counts
                _record(
                    context,
                    provider=provider.name,
                    model=model,
                    started=started,
                    error=StreamAbandoned("el cliente dejó de leer la respuesta"),
                )
            close = getattr(events, "close", None)
            if close is not None:
                close()


def _until_result(
    events: Iterator[TextDelta | LlmResult], *, ends: float, provider: str, model: str
) -> Iterator[TextDelta | LlmResult]:
    """The attempt's events up to its `LlmResult`; `Timeout` past `ends`, `Unavailable` if the
    stream ends without a result."""
    for event in events:
        # The provider's timeout bounds each read; a model that keeps sending slowly
        # is stopped here, at the attempt's timeout (cut to the total deadline).
        if time.monotonic() > ends:
            message = "la respuesta en streaming superó el plazo"
            raise Timeout(message, provider=provider, model=model)
        yield event
        if isinstance(event, LlmResult):
            return
    raise Unavailable("el stream terminó sin resultado final", provider=provider, model=model)


def llm_embed(
    texts: Sequence[str],
    *,
    provider: EmbeddingProvider,
    model: str,
    context: CallContext,
    dimensions: int | None = None,
    task: EmbeddingTask = "passage",
    retry: RetryPolicy = AGENTS,
) -> EmbeddingResult:
    """Embeddings with the same retries and ledger as generation (operation "embedding"
    unless the context says otherwise)."""
    if context.operation == Operation.LLM_REQUEST:
        context = dataclasses.replace(context, operation=Operation.EMBEDDING.value)
    _ensure_credits(context, provider.name, model)
    result, started = _attempted(
        _Attempts(retry, LlmRequest(messages=())),
        lambda attempt: provider.embed(
            texts, model=model, dimensions=dimensions, task=task, timeout_s=attempt.timeout_s
        ),
        context=context,
        provider=provider.name,
        model=model,
    )
    usage.usage_record(
        tenant=context.tenant,
        operation=context.operation,
        provider=provider.name,
        model=result.model,
        input_tokens=result.input_tokens,
        latency_ms=int((time.monotonic() - started) * 1000),
        agent_id=context.agent_id,
        conversation_id=context.conversation_id,
        message_id=context.message_id,
    )
    return result


def llm_media_text(
    request: MediaRequest,
    *,
    context: CallContext,
    provider: MediaProvider | None = None,
    retry: RetryPolicy = MEDIA,
) -> LlmResult:
    """A voice note's transcript or an image's description, with the same retries, credits
    and ledger as generation (the context's operation: "transcription" or
    "image_description"). Raises the last `LlmError` (`Unsupported` without a model)."""
    chosen: MediaProvider = provider or get_provider()  # type: ignore[assignment]  # every provider has media_text
    model = chosen.media_model(request)
    request = dataclasses.replace(request, model=model)
    _ensure_credits(context, chosen.name, model)
    # A spent budget in "handoff_only" refuses media reading too (BudgetExhausted); with
    # "cheaper_model" the media model stays (there is no cheaper reader to switch to).
    budget_request(
        LlmRequest(messages=(), model=model), tenant=context.tenant, provider=chosen.name
    )
    result, started = _attempted(
        _Attempts(retry, LlmRequest(messages=(), timeout_s=request.timeout_s)),
        lambda attempt: chosen.media_text(
            dataclasses.replace(request, timeout_s=attempt.timeout_s)
        ),
        context=context,
        provider=chosen.name,
        model=model,
    )
    _record(context, provider=chosen.name, model=model, started=started, result=result)
    return result


class StreamAbandoned(Exception):
    """Recorded (not raised) when a caller stops reading a stream before its end."""


def _out_of_time(provider: str, model: str) -> LlmError:
    return Timeout("no queda tiempo antes del plazo total", provider=provider, model=model)


def _log_failure(exc: LlmError, attempts: _Attempts, provider: str, model: str) -> None:
    logger.warning(
        "llm.attempt_failed",
        extra={
            "provider": provider,
            "model": model,
            "attempt": attempts.number,
            "error": type(exc).__name__,
        },
    )
