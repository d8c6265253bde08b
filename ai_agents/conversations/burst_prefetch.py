"""A burst's query vector, computed once for the burst instead of once per message.

While a burst is not due, the local model's vector of its text as the turn will see it is
prefetched, so the turn finds it cached (the request-for-a-person detector, a search of a
local knowledge base). Started at once for every message, each message of a burst would cost
a vector that the next message makes useless (~25 ms of CPU each, two of every three wasted
on the bench's bursts of 1-4 messages, on the cores the webhook and the turns need). So the
vector starts `DELAY_S` after the newest message (at the latest `LEAD_S` before the burst is
due), and a later message of the same conversation in this process replaces the text it will
compute. One scheduler thread per process waits for the next start; the vector itself is
computed on the embedding pool (`embeddings.query_prefetch`), as before.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from ai_agents.knowledge.embeddings import query_prefetch

logger = logging.getLogger(__name__)

DELAY_S = 1.0
LEAD_S = 0.5

_pending: dict[str, tuple[float, str]] = {}  # conversation id -> (start at, text)
_wake = threading.Condition()
_scheduler_pid: list[int] = []


def prefetch_later(conversation_id: str, text: str, *, due_in_s: float) -> None:
    """`text`'s vector starts in DELAY_S (LEAD_S before `due_in_s` if that is sooner),
    replacing what this conversation had waiting."""
    start = time.monotonic() + max(0.0, min(DELAY_S, due_in_s - LEAD_S))
    with _wake:
        _pending[conversation_id] = (start, text)
        if _scheduler_pid[-1:] != [os.getpid()]:  # first use in this process (or a fork)
            _scheduler_pid.append(os.getpid())
            threading.Thread(target=_schedule, name="burst-prefetch", daemon=True).start()
        _wake.notify()


def waiting() -> dict[str, str]:
    """conversation id -> the text whose vector is still to start (tests)."""
    with _wake:
        return {key: text for key, (_, text) in _pending.items()}


def _schedule() -> None:
    while True:
        with _wake:
            now = time.monotonic()
            due = [key for key, (at, _) in _pending.items() if at <= now]
            texts = [_pending.pop(key)[1] for key in due]
            if not texts:
                following = min((at for at, _ in _pending.values()), default=None)
                _wake.wait(timeout=None if following is None else following - now)
                continue
        for text in texts:
            try:
                query_prefetch(text)
            except Exception:  # the scheduler outlives a failed start: the turn computes it
                logger.exception("burst_prefetch.failed")
