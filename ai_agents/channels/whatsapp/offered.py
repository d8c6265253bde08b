"""Which WhatsApp threads were last sent options (buttons or a list), so the webhook reads the
bot's last answer only for them: a customer's "2" or typed title chooses an option
(ai_agents/conversations/option_reply.py), and every other text message keeps the webhook's
two database round trips. A Redis marker per binding and thread, set when an answer with
options goes out; the database still decides whether the latest answer offered them, so a
marker left behind only costs one read. Redis down: the database is read, as without it.
The webhook reads the markers of a POST's messages with its binding lookup, in one round trip
(`offered_key`); each process keeps what it read (`erp.local_mirror`: a marker set is
forgotten in every process at once), so most POSTs ask Redis nothing."""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import cache

from erp.local_mirror import MISSING, LocalMirror

logger = logging.getLogger(__name__)

TTL_S = 7 * 24 * 3600  # a choice typed a week later is a new question
LOCAL_TTL_S = 60
_local = LocalMirror("wa-offered:forget", ttl_s=LOCAL_TTL_S)


def offered_key(thread_id: str) -> str:
    """The marker of a thread ("<business number id>:<customer wa_id>": the number is unique
    across tenants, so is the thread)."""
    return f"wa:options-offered:v2:{thread_id}"


def options_offered_mark(*, binding_id: Any, thread_id: str) -> None:
    """Options went out on this thread (never raises: without the marker, a typed choice is
    read as plain text). The marker holds the binding: one of a binding since deleted (its
    number moved to another) does not count (`options_offered`)."""
    key = offered_key(thread_id)
    try:
        cache.set(key, str(binding_id), TTL_S)
    except Exception as exc:
        logger.warning("whatsapp.options_cache_unavailable", extra={"error": type(exc).__name__})
    _local.forget([key])


def post_cache_read(*, binding_keys: set[str], marker_keys: set[str]) -> dict[str, Any] | None:
    """A webhook POST's one cache read: the bindings this process holds no copy of
    (`bindings.local_copy`) and the markers under `marker_keys` it holds none of; the markers
    read are kept here. {key: value or None}, the markers held included. None: the cache is
    down (the bindings come from the database, a marker counts as set)."""
    held, markers = {}, set()
    for key in marker_keys:
        value = _local.get(key)
        if value is MISSING:
            markers.add(key)
        else:
            held[key] = value
    if not binding_keys and not markers:
        return held
    since = _local.generation()
    try:
        found: dict[str, Any] = cache.get_many(sorted(binding_keys | markers))
    except Exception as exc:
        logger.warning("whatsapp.cache_unavailable", extra={"error": type(exc).__name__})
        return None
    for key in markers:
        _local.put(key, found.get(key), since)
    return {**{key: found.get(key) for key in binding_keys | markers}, **held}


def markers_forget_here() -> None:
    """Tests: what this process holds."""
    _local.clear()


def options_offered(marker: Any, *, binding_id: Any) -> bool:
    """Whether the marker read (`offered_key`) says this binding's thread was offered options."""
    return marker == str(binding_id)
