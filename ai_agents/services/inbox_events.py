"""Live inbox events: what changed, for the staff pages (`/inbox/live`, server-sent events).

`inbox_event_publish(tenant_id=, conversation_id=, kind=)` is the one call every code path
that changes a conversation makes (kinds in `KINDS`). It is best effort: the event leaves once
the current transaction commits (never for one that rolls back), a Redis failure is logged and
swallowed, and the caller never waits more than `PUBLISH_TIMEOUT_S`.

Transport: one Redis stream per tenant (`inbox:events:<tenant id>`, capped at `STREAM_MAX`
entries, kept `STREAM_TTL_S` after the last event) on the project's `REDIS_URL`. A stream is
Redis' publish/subscribe that also keeps a short past: a page that reconnects with
`Last-Event-ID` gets what it missed, which plain PUBLISH cannot give. An event carries only
ids and the kind; the page reads what it shows through its own, access-checked endpoints.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

KINDS = frozenset({"message", "status", "assignment", "note", "typing", "delivery", "rating"})
STREAM_MAX = 500
STREAM_TTL_S = 24 * 3600
PUBLISH_TIMEOUT_S = 0.5

_client: Any = None
_client_lock = threading.Lock()


def stream_key(tenant_id: int) -> str:
    return f"inbox:events:{int(tenant_id)}"


def _redis() -> Any:
    global _client
    with _client_lock:
        if _client is None:
            import redis

            _client = redis.Redis.from_url(
                settings.REDIS_URL,
                socket_timeout=PUBLISH_TIMEOUT_S,
                socket_connect_timeout=PUBLISH_TIMEOUT_S,
            )
        return _client


def _nothing() -> Sequence[Any]:
    return ()


def _send(
    tenant_id: int,
    conversation_id: str,
    kind: str,
    along: Callable[[], Sequence[Any]] = _nothing,
) -> None:
    try:
        key = stream_key(tenant_id)
        pipe = _redis().pipeline(transaction=False)
        for command in along():
            pipe.execute_command(*command)
        pipe.xadd(
            key,
            {"conversation_id": conversation_id, "kind": kind},
            maxlen=STREAM_MAX,
            approximate=True,
        )
        pipe.expire(key, STREAM_TTL_S)
        pipe.execute()
    except Exception:  # best effort: a page falls back to polling, the change is stored
        logger.warning(
            "inbox_event.publish_failed",
            extra={"tenant_id": tenant_id, "conversation_id": conversation_id, "kind": kind},
            exc_info=True,
        )


def conversation_changed(conversation: Any, kind: str) -> None:
    """`inbox_event_publish` for a conversation at hand."""
    inbox_event_publish(
        tenant_id=conversation.tenant_id, conversation_id=conversation.pk, kind=kind
    )


def inbox_event_publish(
    *,
    tenant_id: int,
    conversation_id: Any,
    kind: str,
    along: Callable[[], Sequence[Any]] = _nothing,
) -> None:
    """Tells the tenant's open inbox pages that `conversation_id` changed (`kind`), after the
    current transaction commits (at once outside one). Never raises.

    `along()`, called when the event leaves, gives raw Redis commands (on `REDIS_URL`) sent in
    the same round trip, best effort as the event (the engine's token correction)."""
    try:
        if kind not in KINDS:
            raise ValueError(f"unknown inbox event kind {kind!r}")
        tenant, conversation = int(tenant_id), str(conversation_id)
        transaction.on_commit(lambda: _send(tenant, conversation, kind, along))
    except Exception:
        logger.warning("inbox_event.rejected", extra={"kind": kind}, exc_info=True)
