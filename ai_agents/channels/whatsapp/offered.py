"""Which WhatsApp threads were last sent options (buttons or a list), so the webhook reads the
bot's last answer only for them: a customer's "2" or typed title chooses an option
(ai_agents/conversations/option_reply.py), and every other text message keeps the webhook's
two database round trips. A Redis marker per binding and thread, set when an answer with
options goes out; the database still decides whether the latest answer offered them, so a
marker left behind only costs one read. Redis down: the database is read, as without it.
The webhook reads the markers of a POST's messages with its binding lookup, in one round trip
(`offered_key`)."""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import cache

logger = logging.getLogger(__name__)

TTL_S = 7 * 24 * 3600  # a choice typed a week later is a new question


def offered_key(thread_id: str) -> str:
    """The marker of a thread ("<business number id>:<customer wa_id>": the number is unique
    across tenants, so is the thread)."""
    return f"wa:options-offered:v2:{thread_id}"


def options_offered_mark(*, binding_id: Any, thread_id: str) -> None:
    """Options went out on this thread (never raises: without the marker, a typed choice is
    read as plain text). The marker holds the binding: one of a binding since deleted (its
    number moved to another) does not count (`options_offered`)."""
    try:
        cache.set(offered_key(thread_id), str(binding_id), TTL_S)
    except Exception as exc:
        logger.warning("whatsapp.options_cache_unavailable", extra={"error": type(exc).__name__})


def options_offered(marker: Any, *, binding_id: Any) -> bool:
    """Whether the marker read (`offered_key`) says this binding's thread was offered options."""
    return marker == str(binding_id)
