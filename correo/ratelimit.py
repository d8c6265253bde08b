"""A sliding-window limit counted in the shared cache (Redis), so it holds across processes.

The window has `limit` slots, each a cache key holding the time it was taken and expiring
`window_s` seconds later. A request takes a free slot with an atomic `cache.add`; when every
slot is taken it is refused, and `Retry-After` is the time until the oldest slot expires.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from django.core.cache import cache


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_s: int = 0


def hit(key: str, *, limit: int, window_s: int) -> Decision:
    keys = [f"ratelimit:{key}:{i}" for i in range(limit)]
    for _attempt in range(2):  # a slot freed or taken between the read and the add
        taken = cache.get_many(keys)
        now = time.time()
        for slot in keys:
            if slot not in taken and cache.add(slot, now, timeout=window_s):
                return Decision(True)
        taken = cache.get_many(keys)
        if len(taken) >= limit:
            oldest = min(float(v) for v in taken.values())
            wait = max(1, math.ceil(oldest + window_s - time.time()))
            return Decision(False, retry_after_s=wait)
    return Decision(False, retry_after_s=1)
