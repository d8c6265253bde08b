"""Which WhatsApp threads were last sent options (buttons or a list), so the webhook reads the
bot's last answer only for them: a customer's "2" or typed title chooses an option
(ai_agents/conversations/option_reply.py), and every other text message keeps the webhook's
two database round trips. A Redis marker per binding and thread, set when an answer with
options goes out; the database still decides whether the latest answer offered them, so a
marker left behind only costs one read. Redis down: the database is read, as without it."""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import cache

logger = logging.getLogger(__name__)

TTL_S = 7 * 24 * 3600  # a choice typed a week later is a new question


def _key(binding_id: Any, thread_id: str) -> str:
    return f"wa:options-offered:{binding_id}:{thread_id}"


def options_offered_mark(*, binding_id: Any, thread_id: str) -> None:
    """Options went out on this thread (never raises: without the marker, a typed choice is
    read as plain text)."""
    try:
        cache.set(_key(binding_id, thread_id), 1, TTL_S)
    except Exception as exc:
        logger.warning("whatsapp.options_cache_unavailable", extra={"error": type(exc).__name__})


def options_offered(*, binding_id: Any, thread_id: str) -> bool:
    """Whether the thread may have been offered options (True when Redis cannot say)."""
    try:
        return bool(cache.get(_key(binding_id, thread_id)))
    except Exception as exc:
        logger.warning("whatsapp.options_cache_unavailable", extra={"error": type(exc).__name__})
        return True
