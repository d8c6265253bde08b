"""The outbound HTTP error taxonomy: a `retryable` flag on the type, so retry decisions never
parse messages, and the server's Retry-After already in seconds."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from erp.http.redact import redact_body


class HttpError(Exception):
    """Base of every outbound HTTP error. `retryable`: another attempt may succeed."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        method: str = "",
        url: str = "",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.method = method
        self.url = url  # always redacted
        self.status = status
        self.retry_after = retry_after


class HttpTimeout(HttpError):
    retryable = True


class HttpConnectionError(HttpError):
    """Refused, reset, DNS failure, TLS failure: the server may answer later."""

    retryable = True


class HttpBlockedDestination(HttpError):
    """The SSRF guard refused the URL (scheme, or an address that is not public)."""


class HttpResponseTooLarge(HttpError):
    """The body went past the size cap; reading stopped there."""


class HttpTooManyRedirects(HttpError):
    pass


class HttpStatusError(HttpError):
    """A non-2xx answer. `body` is a redacted excerpt, never the whole body."""

    def __init__(self, message: str, *, body: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.body = body


class HttpClientError(HttpStatusError):
    """4xx (except 429): permanent, retrying the same request will not help."""


class HttpRateLimited(HttpStatusError):
    """429. `retry_after` is in seconds when the server said (seconds or HTTP-date)."""

    retryable = True


class HttpServerError(HttpStatusError):
    """5xx: retryable."""

    retryable = True


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def status_error(
    *, method: str, safe_url: str, status: int, headers: Mapping[str, str], content: bytes
) -> HttpStatusError:
    """The typed error of a non-2xx answer (its body excerpt redacted)."""
    body = redact_body(content)
    retry_after = parse_retry_after(headers.get("retry-after"))
    kw: dict[str, Any] = {
        "method": method,
        "url": safe_url,
        "status": status,
        "body": body,
        "retry_after": retry_after,
    }
    message = f"{method} {safe_url} answered {status}"
    if status == 429:
        return HttpRateLimited(message, **kw)
    if status >= 500:
        return HttpServerError(message, **kw)
    return HttpClientError(message, **kw)


# --- Retry decisions (for erp.retry.call_with_retries) ---------------------------------------
def is_retryable(error: Exception, *, max_retry_after_s: float = 60.0) -> bool:
    """A retryable HttpError, unless the server asks to wait longer than `max_retry_after_s`:
    then the caller (a Celery task) reschedules itself with `countdown=error.retry_after`
    instead of blocking."""
    if not isinstance(error, HttpError) or not error.retryable:
        return False
    return error.retry_after is None or error.retry_after <= max_retry_after_s


def retry_after_of(error: Exception) -> float | None:
    """The server's requested wait, in seconds (None: it did not say)."""
    return error.retry_after if isinstance(error, HttpError) else None
