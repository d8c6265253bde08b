"""The Celery broker's Redis transport, with one Redis client per channel.

kombu's Redis channel builds a new `redis.Redis` for every message it publishes
(`conn_or_acquire`): each copies the client's table of response callbacks, ~0.4 ms of a
WhatsApp webhook's CPU for its one enqueue. Here the channel keeps the first one it builds: a
client is safe to share between threads (each command takes a connection from the channel's
pool and gives it back), so nothing else changes. `erp.celery` selects this transport when the
broker is Redis.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis


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


class Transport(redis.Transport):
    Channel = Channel
