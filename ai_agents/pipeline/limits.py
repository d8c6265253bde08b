"""Atomic Redis counters (fixed windows) for the pipeline's limits, through the default cache.

`hit(key, limit=, window_s=, amount=1)`: one Lua script on the cache's Redis, so concurrent
callers (threads, processes, hosts) never exceed the limit. The window starts at the first
counted hit and lasts `window_s` seconds. A hit is counted only when it fits
(`count + amount <= limit`); a refused hit adds nothing, so a refused request does not eat into
the next one's allowance. `retry_after_s` (refused hits) is the rest of the window, rounded up,
at least 1.

- `conversation_message_limit(conversation_id)`: 20 messages per 60 s per conversation (RN-4).
- `tenant_token_limit(tenant_id, tokens, limit_per_minute)`: counts `tokens` (estimated before
  the model call) against the tenant's per-minute budget; `tenant_tokens_add` records the
  difference once the real usage is known (unconditionally, it may go past the limit).
- `notice_once(key, window_s)`: True only the first time in the window (SET NX), so the pipeline
  sends at most one polite notice per window.
Keys live under the cache's KEY_PREFIX: `rl:<key>` for counters, `notice:<key>` for notices.

Input bounds (no Redis): `input_bound(text, channel)` cuts a customer message to the characters
the pipeline uses of it (`INPUT_MAX_CHARS`, per channel) before any expensive work: trigger
matching, the query embedding, full-text search, the prompt. The stored message stays whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

CONVERSATION_MESSAGES_PER_MINUTE = 20  # RN-4

# Characters of one customer message the pipeline works with, per channel. REST and web chat
# refuse longer texts (400), e-mail keeps the first 8,000 of the body; WhatsApp cannot refuse a
# message (Meta would redeliver it for days), so its text is cut at its own 4,096 (the limit
# WhatsApp gives a text message). The history of earlier messages is cut the same way.
INPUT_MAX_CHARS: dict[str, int] = {"api": 8000, "webchat": 4000, "email": 8000, "whatsapp": 4096}
INPUT_MAX_CHARS_DEFAULT = 4000  # channels registered without a limit of their own


def input_max_chars(channel: str) -> int:
    return INPUT_MAX_CHARS.get(channel, INPUT_MAX_CHARS_DEFAULT)


def input_bound(text: str, channel: str) -> tuple[str, int | None]:
    """`text` cut to the channel's limit, and its full length when it was cut (else None)."""
    limit = input_max_chars(channel)
    if len(text) <= limit:
        return text, None
    return text[:limit], len(text)


_HIT = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local amount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window_ms = tonumber(ARGV[3])
if current + amount > limit then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then ttl = 0 end
  return {current, 0, ttl}
end
local count = redis.call('INCRBY', KEYS[1], amount)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], window_ms)
  ttl = window_ms
end
return {count, 1, ttl}
"""

_ADD = """
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return count
"""


@dataclass(frozen=True)
class LimitResult:
    allowed: bool
    count: int
    retry_after_s: int


def _client_and_key(key: str) -> tuple[Any, str]:
    full = cache.make_and_validate_key(f"rl:{key}")
    return cache._cache.get_client(full, write=True), full  # type: ignore[attr-defined]  # Django's private Redis client


def _window_ms(window_s: float) -> int:
    if window_s <= 0:
        raise ValueError("window_s must be > 0")
    return max(1, int(window_s * 1000))


def hit(key: str, *, limit: int, window_s: float, amount: int = 1) -> LimitResult:
    """Count `amount` against `limit` in the current window of `key`, if it fits."""
    if amount < 0:
        raise ValueError("amount must be >= 0")
    client, full = _client_and_key(key)
    count, allowed, ttl_ms = client.eval(_HIT, 1, full, amount, limit, _window_ms(window_s))
    if allowed:
        return LimitResult(allowed=True, count=int(count), retry_after_s=0)
    return LimitResult(
        allowed=False, count=int(count), retry_after_s=max(1, math.ceil(int(ttl_ms) / 1000))
    )


def add(key: str, *, amount: int, window_s: float) -> int:
    """Add `amount` to the window of `key` unconditionally; the new count."""
    client, full = _client_and_key(key)
    return int(client.eval(_ADD, 1, full, amount, _window_ms(window_s)))


def conversation_message_limit(conversation_id: Any) -> LimitResult:
    return hit(f"conv-msgs:{conversation_id}", limit=CONVERSATION_MESSAGES_PER_MINUTE, window_s=60)


def tenant_token_limit(tenant_id: Any, tokens: int, limit_per_minute: int) -> LimitResult:
    return hit(
        f"tenant-tokens:{tenant_id}", limit=limit_per_minute, window_s=60, amount=max(0, tokens)
    )


def tenant_tokens_add(tenant_id: Any, tokens: int) -> int:
    return add(f"tenant-tokens:{tenant_id}", amount=tokens, window_s=60)


def notice_once(key: str, window_s: float) -> bool:
    """True the first time in `window_s` seconds for `key`, False afterwards."""
    return bool(cache.add(f"notice:{key}", 1, timeout=max(1, math.ceil(window_s))))
