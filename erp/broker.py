"""The Celery broker's Redis transport, with one Redis client per channel.

kombu's Redis channel builds a new `redis.Redis` for every message it publishes
(`conn_or_acquire`): each copies the client's table of response callbacks, ~0.4 ms of a
WhatsApp webhook's CPU for its one enqueue. Here the channel keeps the first one it builds: a
client is safe to share between threads (each command takes a connection from the channel's
pool and gives it back), so nothing else changes. `erp.celery` selects this transport when the
broker is Redis.

While `capturing` is set (`erp.celery.task_command`), the channel hands the message
it would push, with its queue's key, to the capture instead of sending it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from kombu.transport import redis

# While set, a channel appends (queue key, message) here instead of pushing the message.
capturing: ContextVar[list[tuple[str, dict[str, Any]]] | None] = ContextVar(
    "broker_capturing", default=None
)


class Channel(redis.Channel):
    _publish_client: Any = None

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        if self._publish_client is None:
            self._publish_client = self._create_client()  # type: ignore[attr-defined]  # kombu's, unstubbed
        yield self._publish_client

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        captured = capturing.get()
        if captured is None or "_publish_batch" in kwargs or queue in self._expires:  # type: ignore[attr-defined]  # kombu's, unstubbed
            super()._put(queue, message, **kwargs)
            return
        priority = self._get_message_priority(message, reverse=False)
        key = self._q_for_pri(queue, priority)  # type: ignore[attr-defined]  # kombu's, unstubbed
        captured.append((key, message))


class Transport(redis.Transport):
    Channel = Channel
