"""The smallest useful model call: checks a provider's key, URL and model.

Used by `manage.py llm_ping` and by the agent page's "Probar conexión". With a context the call
goes through the gateway (one attempt, one usage ledger row: a ping costs like any call).
"""

from __future__ import annotations

from erp.llm.gateway import CallContext, RetryPolicy, llm_generate
from erp.llm.types import LlmRequest, LlmResult, Message, Provider

PROMPT = "Responde únicamente con la palabra: pong"


def ping_request(*, model: str | None, timeout_s: float) -> LlmRequest:
    return LlmRequest(
        messages=[Message("user", PROMPT)],
        model=model or None,
        max_output_tokens=256,
        timeout_s=timeout_s,
    )


def llm_ping(
    *, provider: Provider, model: str | None, timeout_s: float, context: CallContext | None
) -> LlmResult:
    """One attempt, no retry (a ping reports the first failure as it is). Without a context the
    provider is called directly and nothing is recorded. Raises the provider's `LlmError`."""
    request = ping_request(model=model, timeout_s=timeout_s)
    if context is None:
        return provider.generate(request)
    policy = RetryPolicy(timeout_s=timeout_s, attempts=1)
    return llm_generate(request, context=context, provider=provider, retry=policy)
