"""The one retry helper: how many attempts, how long to wait between them, when to stop.

Every retry loop of the project runs on it: the LLM gateway (`erp.llm.gateway.RetryPolicy`),
the WhatsApp send (`messages_post_with_retries`), the SMTP send, the handoff webhook task (its
Celery countdowns) and `erp.http` callers (`call_with_retries`).

- `Backoff`: `attempts` in all (the first included); before retry n (0 = the first retry) it
  waits `base_delay_s * factor**n`, capped at `max_delay_s`; a server's requested wait
  (Retry-After) replaces it, capped at `max_retry_after_s` (None: honoured whole).
- `Attempts`: the bookkeeping of one loop, for loops that are not a plain call (results that
  say "retry" instead of raising, per-attempt timeouts cut to a total deadline).
- `call_with_retries`: a call retried on the exceptions a predicate calls retryable.

Retry decisions depend on the error's type (a `retryable` flag), never on its message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

logger = logging.getLogger("erp.retry")

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    attempts: int = 3  # in all, the first included
    base_delay_s: float = 1.0
    factor: float = 2.0
    max_delay_s: float = 30.0  # cap of the computed waits
    max_retry_after_s: float | None = None  # cap of a server's requested wait (None: none)

    def wait_s(self, retry_index: int, *, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry_index` (0 = the first retry)."""
        if retry_after is not None:
            cap = self.max_retry_after_s
            return max(0.0, retry_after if cap is None else min(retry_after, cap))
        return max(0.0, min(self.base_delay_s * self.factor**retry_index, self.max_delay_s))


class Attempts:
    """One retry loop: `begin()` before each attempt, `retry_wait()` after a failure says
    whether to go on and how long to wait first, `pause()` waits it.

    A deadline (`deadline_s` from creation) bounds attempts and waits together: a retry whose
    wait would leave less than `reserve_s` for the next attempt is not made."""

    def __init__(
        self,
        backoff: Backoff,
        *,
        deadline_s: float | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backoff = backoff
        self.number = 0
        self._sleep = sleep or time.sleep  # looked up now: a test's patch of time.sleep holds
        self._clock = clock
        self.deadline = None if deadline_s is None else clock() + deadline_s

    def begin(self) -> int:
        """Counts an attempt; its number (1 = the first)."""
        self.number += 1
        return self.number

    def remaining_s(self) -> float | None:
        """Seconds left before the deadline (None: no deadline)."""
        return None if self.deadline is None else self.deadline - self._clock()

    def retry_wait(
        self, *, retryable: bool, retry_after: float | None = None, reserve_s: float = 0.0
    ) -> float | None:
        """The wait before another attempt, or None when the error, the attempts left or the
        deadline say stop."""
        if not retryable or self.number >= self.backoff.attempts:
            return None
        wait = self.backoff.wait_s(self.number - 1, retry_after=retry_after)
        remaining = self.remaining_s()
        if remaining is not None and wait + reserve_s > remaining:
            return None
        return wait

    def pause(self, wait: float) -> None:
        if wait > 0:
            self._sleep(wait)


def call_with_retries(
    call: Callable[[], T],
    *,
    backoff: Backoff,
    retryable: Callable[[Exception], bool],
    retry_after: Callable[[Exception], float | None] = lambda error: None,
    sleep: Callable[[float], None] | None = None,
    on_retry: Callable[[int, Exception, float], None] | None = None,
) -> T:
    """Run `call`, retrying the exceptions `retryable` accepts, at most `backoff.attempts`
    times in all; the last error is raised. `retry_after` reads a server's requested wait;
    `on_retry(attempt, error, wait_s)` runs before each wait (the caller's own log line)."""
    attempts = Attempts(backoff, sleep=sleep)
    while True:
        number = attempts.begin()
        try:
            return call()
        except Exception as error:
            wait = attempts.retry_wait(retryable=retryable(error), retry_after=retry_after(error))
            if wait is None:
                raise
            if on_retry is not None:
                on_retry(number, error, wait)
            logger.info(
                "retry attempt %s/%s after %s, waiting %.2f s",
                number,
                backoff.attempts,
                type(error).__name__,
                wait,
                extra={"attempt": number, "error": type(error).__name__},
            )
            attempts.pause(wait)
