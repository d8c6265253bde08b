"""Retrying calls of the HTTP client on retryable errors, honouring Retry-After."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from erp.http.errors import HttpError

logger = logging.getLogger("erp.http")

T = TypeVar("T")


def with_retries(
    call: Callable[[], T],
    *,
    attempts: int = 3,
    base_delay: float = 0.5,
    max_delay: float = 30.0,
    max_retry_after: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `call`, retrying only retryable `HttpError`s, at most `attempts` times in all.

    Waits `base_delay * 2**n` (capped at `max_delay`) or the server's Retry-After. When the
    server asks for longer than `max_retry_after`, the error is raised at once: the caller (a
    Celery task) can reschedule itself with `countdown=error.retry_after` instead of blocking.
    """
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except HttpError as error:
            if not error.retryable or attempt == attempts:
                raise
            if error.retry_after is not None:
                if error.retry_after > max_retry_after:
                    raise
                delay = error.retry_after
            else:
                delay = min(max_delay, base_delay * 2 ** (attempt - 1))
            logger.info(
                "http.retry attempt %s/%s after %s, waiting %.2f s",
                attempt,
                attempts,
                type(error).__name__,
                delay,
                extra={"http_url": error.url, "attempt": attempt},
            )
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
