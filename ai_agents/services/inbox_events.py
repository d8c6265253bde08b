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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Event:
    tenant_id: int
    conversation_id: str
    kind: str
    along: Callable[[], Sequence[Any]] = _nothing


@dataclass(frozen=True)
class _Commands:
    commands: Sequence[Sequence[Any]]
    failed: Callable[[], None]


# While set (`held`), what would leave now waits here for the block's one round trip.
_held: ContextVar[list[_Event | _Commands] | None] = ContextVar("inbox_events_held", default=None)


@contextmanager
def held() -> Iterator[None]:
    """Inside the block, the events that leave and `commands_send`'s commands are held, and
    all of them go in ONE round trip when it ends (even when it raises): the WhatsApp webhook
    sends its messages' events and its answers' tasks together."""
    items: list[_Event | _Commands] = []
    token = _held.set(items)
    try:
        yield
    finally:
        _held.reset(token)
        if items:
            _trip(items)


def commands_send(commands: Sequence[Sequence[Any]], *, failed: Callable[[], None]) -> None:
    """Raw Redis commands (on `REDIS_URL`) sent now, or with the events of the current `held`
    block. `failed()` is called (never raises) when they could not be sent."""
    item = _Commands(commands=commands, failed=failed)
    items = _held.get()
    if items is None:
        _trip([item])
    else:
        items.append(item)


def _send(
    tenant_id: int,
    conversation_id: str,
    kind: str,
    along: Callable[[], Sequence[Any]] = _nothing,
) -> None:
    event = _Event(tenant_id=tenant_id, conversation_id=conversation_id, kind=kind, along=along)
    items = _held.get()
    if items is None:
        _trip([event])
    else:
        items.append(event)


def _trip(items: Sequence[_Event | _Commands]) -> None:
    """Sends every item in one round trip. Best effort: what failed is logged per item (an item
    whose commands all succeeded is not, whatever happened to the others)."""
    failed: list[_Event | _Commands] = []
    spans: list[tuple[_Event | _Commands, int, int]] = []
    commands: list[Sequence[Any]] = []
    for item in items:
        try:
            own = _commands_of(item)
        except Exception:  # its `along()` failed: the item is not sent
            failed.append(item)
            continue
        spans.append((item, len(commands), len(commands) + len(own)))
        commands.extend(own)
    try:
        results = _round_trip(commands) if commands else []
    except Exception:  # no answer at all (Redis down): every item failed
        failed += [item for item, _start, _end in spans]
    else:
        failed += [
            item
            for item, start, end in spans
            if any(isinstance(result, Exception) for result in results[start:end])
        ]
    for item in failed:
        _failed(item)


def _round_trip(commands: Sequence[Sequence[Any]]) -> list[Any]:
    """The commands written together on one pooled connection and their replies read back, a
    refused command's error in its place: what redis-py's pipeline does, without building one
    (its object, command stack and per-command bookkeeping cost ~0.1 ms of CPU per message,
    bench/pipeline.py). A connection error is retried as the pipeline retries it (the client's
    `Retry`, on a fresh connection)."""
    from redis.exceptions import ResponseError

    pool = _redis().connection_pool
    connection = pool.get_connection()

    def send() -> list[Any]:
        connection.send_packed_command(connection.pack_commands(commands))
        replies: list[Any] = []
        for _command in commands:
            try:
                replies.append(connection.read_response())
            except ResponseError as refused:
                replies.append(refused)
        return replies

    try:
        return connection.retry.call_with_retry(send, lambda _error: connection.disconnect())
    except BaseException:
        connection.disconnect()  # replies may be left unread: never reused as is
        raise
    finally:
        pool.release(connection)


def _commands_of(item: _Event | _Commands) -> list[Sequence[Any]]:
    if isinstance(item, _Commands):
        return list(item.commands)
    key = stream_key(item.tenant_id)
    return [
        *item.along(),
        (
            "XADD",
            key,
            "MAXLEN",
            "~",
            STREAM_MAX,
            "*",
            "conversation_id",
            item.conversation_id,
            "kind",
            item.kind,
        ),
        ("EXPIRE", key, STREAM_TTL_S),
    ]


def _failed(item: _Event | _Commands) -> None:
    if isinstance(item, _Commands):
        item.failed()
        return
    # best effort: a page falls back to polling, the change is stored
    logger.warning(
        "inbox_event.publish_failed",
        extra={
            "tenant_id": item.tenant_id,
            "conversation_id": item.conversation_id,
            "kind": item.kind,
        },
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
