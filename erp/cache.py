"""Django's Redis cache, keeping one client per connection pool.

Django builds a new `redis.Redis` for every cache operation (its response-callback table
included: ~0.1 ms each); the pipeline makes several per message (rate limits, token budget,
notices, query-embedding cache). Clients are thread-safe over their pool, so one is enough,
and one pool per configuration for the whole process (see `_shared`).
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient as DjangoRedisCacheClient

# (servers, pool options) -> the pools and clients every cache object of that configuration
# shares. Under ASGI Django makes a new cache object for each request (`caches` is
# context-local), so a pool of its own would open a new Redis connection for every request.
_shared: dict[str, tuple[dict[int, Any], dict[int, Any]]] = {}
_shared_lock = threading.Lock()


class RedisCacheClient(DjangoRedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        key = repr((self._servers, self._pool_class, sorted(self._pool_options.items())))  # type: ignore[attr-defined]  # private to Django, unstubbed
        with _shared_lock:
            pools, clients = _shared.setdefault(key, ({}, {}))
        self._pools = pools  # redis-py pools are thread-safe and start anew after a fork
        self._clients: dict[int, Any] = clients

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]  # private to Django, unstubbed
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(  # type: ignore[attr-defined]  # private to Django, unstubbed
                connection_pool=self._get_connection_pool(write)  # type: ignore[attr-defined]  # private to Django, unstubbed
            )
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: Any, params: Any) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient
