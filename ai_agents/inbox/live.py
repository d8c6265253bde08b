"""`GET /inbox/live`: the member's inbox events as server-sent events (`text/event-stream`).

One stream per page, for every tenant the user is a member of (never another's): the view
reads the tenants, gives its database connection back, and then only waits on Redis
(`ai_agents.services.inbox_events` streams). Events:

- `ready` {"tenants": [ids]} once connected;
- `inbox` {"tenant_id", "conversation_id", "kind"} per change, with an `id:` that is the
  cursor over all the user's tenants; the browser's automatic reconnect sends it back as
  `Last-Event-ID` and receives what it missed (up to the last `STREAM_MAX` per tenant);
- a `: ping` comment every `INBOX_LIVE_HEARTBEAT_S` seconds (default 15) when idle.

A connection lasts at most `INBOX_LIVE_LIFETIME_S` seconds (default 300), then ends with
`retry: 1000`; EventSource reconnects by itself. Under uvicorn (ASGI) only: under a WSGI
server (which would buffer the stream) the answer is 204, and the pages poll.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.core.handlers.asgi import ASGIRequest
from django.db import connection
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET
from redis.exceptions import RedisError

from ai_agents.services.inbox_events import stream_key
from erp.tenancy.selectors import tenant_ids_for

logger = logging.getLogger(__name__)

MAX_CURSOR_CHARS = 2000
READ_COUNT = 100


def _settings() -> tuple[float, float]:
    heartbeat = float(getattr(settings, "INBOX_LIVE_HEARTBEAT_S", 15))
    lifetime = float(getattr(settings, "INBOX_LIVE_LIFETIME_S", 300))
    return heartbeat, lifetime


def cursor_parse(raw: str, tenant_ids: list[int]) -> dict[int, str]:
    """`Last-Event-ID` ("<tenant>=<stream id>" joined by ".") -> {tenant: stream id}, only for
    the user's tenants and well-formed ids; anything else is ignored (starts from now)."""
    found: dict[int, str] = {}
    for part in raw[:MAX_CURSOR_CHARS].split("."):
        tenant, _, stream_id = part.partition("=")
        if not tenant.isdigit() or int(tenant) not in tenant_ids:
            continue
        ms, dash, seq = stream_id.partition("-")
        if ms.isdigit() and dash and seq.isdigit():
            found[int(tenant)] = stream_id
    return found


def cursor_format(positions: dict[int, str]) -> str:
    return ".".join(f"{tenant}={position}" for tenant, position in sorted(positions.items()))


def _frame(event: str, data: Any, event_id: str = "") -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _db_release() -> None:
    connection.close()


async def _start_positions(client: Any, tenant_ids: list[int], known: dict[int, str]) -> dict:
    """Where each tenant's stream is read from: the client's cursor, else its last entry."""
    positions: dict[int, str] = {}
    for tenant in tenant_ids:
        if tenant in known:
            positions[tenant] = known[tenant]
            continue
        last = await client.xrevrange(stream_key(tenant), count=1)
        positions[tenant] = _text(last[0][0]) if last else "0-0"
    return positions


async def _events(tenant_ids: list[int], known: dict[int, str]) -> AsyncIterator[str]:
    import redis.asyncio as aioredis

    # The view's database connection goes back before any waiting (same thread as the view).
    await sync_to_async(_db_release)()
    heartbeat, lifetime = _settings()
    # A blocked XREAD waits up to a heartbeat: the socket must wait longer than that.
    client: Any = aioredis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=heartbeat + 10, socket_connect_timeout=5
    )
    try:
        positions = await _start_positions(client, tenant_ids, known)
        yield "retry: 1000\n" + _frame("ready", {"tenants": tenant_ids})
        ends = time.monotonic() + lifetime
        keys = {stream_key(t): t for t in tenant_ids}
        while (left := ends - time.monotonic()) > 0 and tenant_ids:
            wait_ms = max(1, int(min(heartbeat, left) * 1000))
            streams = {key: positions[tenant] for key, tenant in keys.items()}
            batches = await client.xread(streams, count=READ_COUNT, block=wait_ms)
            if not batches:
                yield ": ping\n\n"
                continue
            for key, entries in batches:
                tenant = keys[_text(key)]
                for entry_id, fields in entries:
                    positions[tenant] = _text(entry_id)
                    data: dict[str, Any] = {_text(k): _text(v) for k, v in fields.items()}
                    data["tenant_id"] = tenant
                    yield _frame("inbox", data, cursor_format(positions))
        if not tenant_ids:
            await asyncio.sleep(min(heartbeat, lifetime))
    except (RedisError, OSError):
        # Redis went away: the stream ends; the page reconnects, or polls after 3 failures.
        logger.warning("inbox_live.redis_unavailable", exc_info=True)
    finally:
        await client.aclose()


@require_GET
@staff_member_required
def inbox_live(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    if not isinstance(request, ASGIRequest):
        # A WSGI server would hold the whole stream back: 204 tells EventSource to stop
        # trying, and the page polls.
        return HttpResponse(status=204)
    tenant_ids = sorted(tenant_ids_for(request.user))
    raw = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id", "")
    response = StreamingHttpResponse(
        _events(tenant_ids, cursor_parse(raw, tenant_ids)), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
