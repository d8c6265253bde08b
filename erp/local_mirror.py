"""A process-local copy of a few shared-cache values, forgotten in every process at once.

Django's cache (Redis) costs every read a round trip and ~0.3 ms of CPU in redis-py; a value
read on every request (the WhatsApp webhook's binding of a business number) can live in the
process itself, if every process forgets it the moment it changes. `LocalMirror` keeps such
copies only while this process listens on a Redis publish/subscribe channel where `forget`
announces the keys that changed:

- a background thread (one per process and mirror, started on first use, started anew, with
  a fresh lock, after a fork) subscribes; until Redis confirms the subscription, and from the
  moment the connection fails until it is back, the mirror holds nothing and stores nothing:
  callers read the shared cache as if it did not exist;
- `forget(keys)` drops the keys here and publishes them; every listening process drops them
  when the message arrives (sub-millisecond on one host). A value read while a forget was in
  flight is not stored: `generation()` is taken before the shared read, and `put` stores only
  if no forget arrived since;
- each copy also expires after `ttl_s` (the safety net for a write that announced nothing,
  or a forget lost while the connection was failing before anyone noticed: the listener pings
  every `PING_S` and a silent connection fails within `SOCKET_TIMEOUT_S`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterable
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

MISSING: Any = object()
PING_S = 5.0
SOCKET_TIMEOUT_S = 10.0
RETRY_S = 1.0


class LocalMirror:
    def __init__(self, channel: str, *, ttl_s: float, max_entries: int = 10_000) -> None:
        self.channel = channel
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, Any]] = {}
        self._generation = 0
        self._forgot_at = 0  # the generation the latest forget made
        self._forgot_all = 0  # ... the latest forget of everything
        self._forgot_keys: dict[str, int] = {}  # key -> the generation that forgot it last
        self._live = False
        self._pid = 0
        self._publisher: Any = None
        self._publisher_pid = 0
        _mirrors.add(self)

    # --- reading and storing ------------------------------------------------------------------

    def get(self, key: str) -> Any:
        """The copy of `key`, or MISSING (none, expired, or the mirror is not listening)."""
        self._ensure_listening()
        entry = self._entries.get(key)
        if entry is None or not self._live:
            return MISSING
        expires, value = entry
        if expires < time.monotonic():
            self._entries.pop(key, None)
            return MISSING
        return value

    def generation(self) -> int:
        """To take BEFORE reading the shared copy that `put` will store."""
        self._ensure_listening()
        return self._generation

    def forgotten_since(self, generation: int, key: str | None = None) -> bool:
        """Whether a forget (made here, or heard from another process) came after
        `generation()` returned `generation`: the value read since may be one the forget
        replaced, not to be written back to the shared copy either. With `key`, a forget of
        that key (or of everything); without, any forget. A subscription confirmed or lost is
        no forget (a forget missed while the connection failed cannot be known: the shared
        copy's own TTL ends what it left)."""
        if key is None:
            return self._forgot_at > generation
        return max(self._forgot_all, self._forgot_keys.get(key, 0)) > generation

    def put(self, key: str, value: Any, generation: int) -> None:
        """Stores `value` read after `generation()` returned `generation`, unless a forget (or
        a lost connection) came since."""
        with self._lock:
            if not self._live or generation != self._generation:
                return
            if len(self._entries) >= self.max_entries:
                # All of it, not the oldest: a bound on memory, not a cache policy. The copies
                # dropped cost one shared read each to get back (what a process without the
                # mirror pays on every request), the clear is O(1) per put amortised, and
                # 10k is far above what one process reads within `ttl_s` (the business numbers
                # of every tenant; the option markers of the threads written in a minute).
                self._entries.clear()
            self._entries[key] = (time.monotonic() + self.ttl_s, value)

    # --- forgetting ---------------------------------------------------------------------------

    def forget(self, keys: Iterable[str]) -> None:
        """Drops `keys` here and in every listening process. Never raises: a failed publish is
        logged (the listeners' connections are failing too, or `ttl_s` ends the copies)."""
        keys = sorted(set(keys))
        if not keys:
            return
        self._drop(keys)
        try:
            self._publisher_client().publish(self.channel, json.dumps(keys))
        except Exception as exc:
            logger.warning("local_mirror.publish_failed", extra={"error": type(exc).__name__})

    def settled(self, timeout_s: float = 5.0) -> bool:
        """Whether, within `timeout_s`, this mirror listens and has heard every forget published
        before the call (tests: a forget still in flight drops what a test reads next). A token
        of its own is published, again until it arrives: Redis delivers a channel's messages in
        the order it took them, so the ones before it have arrived too."""
        token = f"settled:{uuid.uuid4().hex}"
        since = self.generation()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._live:
                self._publisher_client().publish(self.channel, json.dumps([token]))
            for _ in range(10):
                if self._live and self.forgotten_since(since, token):
                    return True
                time.sleep(0.01)
        return False

    def close(self) -> None:
        """Stops listening (the thread ends within a second); the mirror keeps nothing."""
        with self._lock:
            self._pid = -1
            self._live = False
            self._entries.clear()
            self._generation += 1

    def clear(self) -> None:
        """Everything this process holds (tests)."""
        self._drop(None)

    def _drop(self, keys: Iterable[str] | None) -> None:
        with self._lock:
            self._generation += 1
            self._forgot_at = self._generation
            if keys is None or len(self._forgot_keys) >= self.max_entries:
                # Everything (or too many to remember one by one: as if all were forgotten).
                self._forgot_all = self._generation
                self._forgot_keys.clear()
            if keys is None:
                self._entries.clear()
                return
            for key in keys:
                self._entries.pop(key, None)
                self._forgot_keys[key] = self._generation

    def _publisher_client(self) -> Any:
        # One client per process, whether or not this process listens yet (a forget may come
        # before any read); a fork makes its own.
        if self._publisher is None or self._publisher_pid != os.getpid():
            self._publisher, self._publisher_pid = _client(), os.getpid()
        return self._publisher

    # --- listening ----------------------------------------------------------------------------

    def _ensure_listening(self) -> None:
        if self._pid == os.getpid() or self._pid == -1:
            return
        with self._lock:
            if self._pid == os.getpid() or self._pid == -1:
                return
            # A new process (or a fork): nothing inherited is trusted.
            self._pid = os.getpid()
            self._live = False
            self._entries.clear()
            self._generation += 1
            threading.Thread(
                target=self._listen, name=f"local-mirror:{self.channel}", daemon=True
            ).start()

    def _listen(self) -> None:
        pid, quiet = os.getpid(), False
        while self._pid == pid:
            try:
                self._listen_once(pid)
            except Exception as exc:
                if self._live or not quiet:  # once per outage, not once per retry
                    logger.warning(
                        "local_mirror.listen_failed",
                        extra={"channel": self.channel, "error": type(exc).__name__},
                    )
            quiet = True
            self._live_set(False)
            time.sleep(RETRY_S)

    def _listen_once(self, pid: int) -> None:
        pubsub = _client().pubsub()
        try:
            pubsub.subscribe(self.channel)
            pinged, unanswered = time.monotonic(), False
            while self._pid == pid:
                message = pubsub.get_message(timeout=1.0)
                if message is not None:
                    unanswered = unanswered and message.get("type") != "pong"
                    self._received(message)
                now = time.monotonic()
                if unanswered and now - pinged >= SOCKET_TIMEOUT_S:
                    raise ConnectionError("no answer to the listener's ping")
                if not unanswered and now - pinged >= PING_S:
                    pubsub.ping()  # a silent link fails here or by SOCKET_TIMEOUT_S
                    pinged, unanswered = now, True
        finally:
            pubsub.close()

    def _received(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "subscribe":
            self._live_set(True)
        elif kind == "message":
            try:
                keys = json.loads(message["data"])
            except (TypeError, ValueError):
                keys = None  # unreadable: forget everything
            self._drop(keys if isinstance(keys, list) else None)

    def _live_set(self, live: bool) -> None:
        with self._lock:
            self._live = live and self._pid == os.getpid()
            self._generation += 1
            self._entries.clear()


# Every mirror of the process, for `_unlock_in_child`.
_mirrors: weakref.WeakSet[LocalMirror] = weakref.WeakSet()


def _unlock_in_child() -> None:
    """A fork copies each lock as it was: one held at that instant (by the listener thread,
    or a request's, neither of which exists in the child) would stay held for good, and the
    child's first read would wait on it forever. The child gets fresh locks; what they
    guarded is not trusted anyway (`_ensure_listening` starts the child anew)."""
    for mirror in list(_mirrors):
        mirror._lock = threading.Lock()


os.register_at_fork(after_in_child=_unlock_in_child)


def _client() -> Any:
    import redis

    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=SOCKET_TIMEOUT_S,
    )
