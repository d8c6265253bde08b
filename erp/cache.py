"""Django's Redis cache, keeping one client per connection pool.

Django builds a new `redis.Redis` for every cache operation (its response-callback table
included: ~0.1 ms each); the pipeline makes several per message (rate limits, token budget,
notices, query-embedding cache). Clients are thread-safe over their pool, so one is enough.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient as DjangoRedisCacheClient


class RedisCacheClient(DjangoRedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

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
