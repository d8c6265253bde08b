"""The one rate limiter: sliding windows counted atomically on the cache's Redis.

`hit(key, limit=, window_s=, amount=1)` counts `amount` against `limit` over the last
`window_s` seconds, if it fits. Each counted hit is one entry of a sorted set scored by the
time it was taken (the server's clock, so hosts never disagree); one Lua script drops the
entries older than the window, sums the rest and adds the new one, so concurrent callers
(threads, processes, hosts) never exceed the limit. A refused hit adds nothing, so a refused
request does not eat into the next one's allowance. `retry_after_s` (refused hits) is the time
until enough of the oldest entries leave the window for this hit to fit, rounded up, at least 1
(the whole window when it can never fit).

`add(key, amount=, window_s=)` records `amount` unconditionally (it may go past the limit, or
be negative: a correction of an earlier estimate) and returns the window's new total.
`notice_once(key, window_s)`: True only the first time in the window (SET NX), so a caller
sends at most one polite notice per window.

Used by the conversation engine (messages per conversation, tokens per tenant), the web chat
(sessions per IP, reads and messages per visitor) and correo (questions per member). Keys live
under the cache's KEY_PREFIX: `rl:<key>` for windows, `notice:<key>` for notices.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

# KEYS[1] the window; ARGV: amount, limit, window in ms, entry id. Entries are "<id>:<amount>".
_PRELUDE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local window_ms = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window_ms)
local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local function amount_of(entry) return tonumber(string.match(entry, ':(%-?%d+)$')) end
local total = 0
for i = 1, #entries, 2 do total = total + amount_of(entries[i]) end
local amount = tonumber(ARGV[1])
"""

_HIT = (
    _PRELUDE
    + """
local limit = tonumber(ARGV[2])
if total + amount > limit then
  local excess = total + amount - limit
  local wait = window_ms
  for i = 1, #entries, 2 do
    excess = excess - amount_of(entries[i])
    if excess <= 0 then
      wait = tonumber(entries[i + 1]) + window_ms - now
      break
    end
  end
  return {total, 0, wait}
end
if amount ~= 0 then
  redis.call('ZADD', KEYS[1], now, ARGV[4] .. ':' .. amount)
  redis.call('PEXPIRE', KEYS[1], window_ms)
end
return {total + amount, 1, 0}
"""
)

_ADD = (
    _PRELUDE
    + """
redis.call('ZADD', KEYS[1], now, ARGV[4] .. ':' .. amount)
redis.call('PEXPIRE', KEYS[1], window_ms)
return total + amount
"""
)


@dataclass(frozen=True)
class LimitResult:
    allowed: bool
    count: int
    retry_after_s: int


# The scripts as redis-py `Script`s: EVALSHA sends the 40-character digest instead of the
# script's ~900 characters (loaded again by itself after a server restart or SCRIPT FLUSH),
# and the server neither hashes nor looks the text up on every call: ~35 us of this
# process's CPU per hit (bench/pipeline.py runs two per message).
_scripts: dict[str, Any] = {}


def _script(client: Any, text: str) -> Any:
    script = _scripts.get(text)
    if script is None:
        script = _scripts[text] = client.register_script(text)
    return script


def _client_and_key(key: str) -> tuple[Any, str]:
    full = cache.make_and_validate_key(f"rl:{key}")
    return cache._cache.get_client(full, write=True), full  # type: ignore[attr-defined]  # Django's private Redis client


def _window_ms(window_s: float) -> int:
    if window_s <= 0:
        raise ValueError("window_s must be > 0")
    return max(1, int(window_s * 1000))


def hit(key: str, *, limit: int, window_s: float, amount: int = 1) -> LimitResult:
    """Count `amount` against `limit` over the last `window_s` seconds of `key`, if it fits."""
    if amount < 0:
        raise ValueError("amount must be >= 0")
    window_ms = _window_ms(window_s)
    client, full = _client_and_key(key)
    count, allowed, wait_ms = _script(client, _HIT)(
        keys=[full], args=[amount, limit, window_ms, uuid.uuid4().hex], client=client
    )
    if allowed:
        return LimitResult(allowed=True, count=int(count), retry_after_s=0)
    retry_after_s = max(1, math.ceil(int(wait_ms) / 1000))
    return LimitResult(allowed=False, count=int(count), retry_after_s=retry_after_s)


def add(key: str, *, amount: int, window_s: float) -> int:
    """Add `amount` to the window of `key` unconditionally; the window's new total."""
    client, _full = _client_and_key(key)
    return int(client.execute_command(*add_command(key, amount=amount, window_s=window_s)))


def add_command(key: str, *, amount: int, window_s: float) -> tuple[Any, ...]:
    """`add` as a raw command (on the cache's Redis, `settings.REDIS_URL`) for a caller that
    sends it in the round trip of its own commands: a round trip to a server that sat idle
    costs ~0.2 ms of this process's CPU on a virtual machine (bench/pipeline.py)."""
    window_ms = _window_ms(window_s)
    full = cache.make_and_validate_key(f"rl:{key}")
    return ("EVAL", _ADD, 1, full, amount, 0, window_ms, uuid.uuid4().hex)


def notice_once(key: str, window_s: float) -> bool:
    """True the first time in `window_s` seconds for `key`, False afterwards."""
    return bool(cache.add(f"notice:{key}", 1, timeout=max(1, math.ceil(window_s))))
