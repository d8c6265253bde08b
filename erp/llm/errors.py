"""The LLM error taxonomy. Retry decisions depend on the type, never on message text."""

from __future__ import annotations


class LlmError(Exception):
    """Base of every gateway error. `retryable` says whether another attempt may succeed."""

    retryable = False
    code = "llm_error"

    def __init__(self, message: str = "", *, provider: str = "", model: str = "") -> None:
        super().__init__(message or self.__class__.__name__)
        self.provider = provider
        self.model = model


class RateLimited(LlmError):
    retryable = True
    code = "llm_rate_limited"

    def __init__(self, message: str = "", *, retry_after: float | None = None, **kw: str) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class Timeout(LlmError):
    retryable = True
    code = "llm_timeout"


class Unavailable(LlmError):
    """5xx, connection refused/reset: the provider may answer later."""

    retryable = True
    code = "llm_unavailable"


class AuthFailed(LlmError):
    code = "llm_auth_failed"


class BadRequest(LlmError):
    """A permanent 4xx: the same request will fail again."""

    code = "llm_bad_request"


class Blocked(LlmError):
    """The provider refused the prompt or the answer (safety)."""

    code = "llm_blocked"


class NoCredits(LlmError):
    """The tenant's AI credit balance is spent; fails fast, before any provider call."""

    code = "llm_no_credits"


class BudgetExhausted(NoCredits):
    """The tenant's monthly budget is spent and its action is "handoff_only": no model call;
    a caller that handles NoCredits handles this too, the agents escalate in words."""

    code = "llm_budget_exhausted"


class NotConfigured(LlmError):
    """No provider is configured for this model (no API key / base URL)."""

    code = "llm_not_configured"


class Unsupported(LlmError):
    """The provider cannot do this at all (the offline provider hearing audio): permanent."""

    code = "llm_unsupported"
