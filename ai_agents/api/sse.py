"""Server-sent events for POST /api/v1/agents/{id}/messages with `Accept: text/event-stream`.

Events: `token` {"text"} as the model writes the answer, `citations` {"citations"}, `done`
(the same body as the JSON response) and `error` {"code", "message"}. The pipeline runs in a
worker thread (it holds the conversation's row lock and uses the sync ORM); an async generator
relays its deltas so the stream is not buffered under ASGI (reference/stack.md section 5). If
the client hangs up, the pipeline still finishes and stores the reply.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from django.db import connection
from django.http import StreamingHttpResponse
from django.utils.translation import gettext as _
from rest_framework.renderers import BaseRenderer

from ai_agents.models import Agent
from ai_agents.pipeline.run import Inbound, message_process

logger = logging.getLogger(__name__)


class EventStreamRenderer(BaseRenderer):
    """Lets DRF accept `Accept: text/event-stream` (else 406); the view streams itself."""

    media_type = "text/event-stream"
    format = "txt"

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> Any:
        return json.dumps(data).encode() if not isinstance(data, bytes | str) else data


def wants_stream(request: Any) -> bool:
    return "text/event-stream" in request.headers.get("Accept", "")


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _events(
    agent: Agent,
    inbound: Inbound,
    present: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def push(kind: str, value: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

    def work() -> None:
        try:
            body = message_process(
                agent=agent, inbound=inbound, on_delta=lambda t: push("token", t)
            )
            # `present` shapes the result for another audience (the web chat visitor); it runs
            # here, in the pipeline's thread, so it may read the database.
            push("result", present(body) if present is not None else body)
        except Exception:
            logger.exception("pipeline.stream_failed")
            push("fail", None)
        finally:
            connection.close()

    worker = asyncio.ensure_future(asyncio.to_thread(work))
    streamed = False
    try:
        while True:
            kind, value = await queue.get()
            if kind == "token":
                streamed = True
                yield _event("token", {"text": value})
                continue
            if kind == "fail":
                yield _event(
                    "error",
                    {"code": "internal_error", "message": _("No se pudo procesar el mensaje.")},
                )
                return
            body: dict[str, Any] = value
            limited = body.pop("rate_limited", None)
            if limited is not None:
                yield _event(
                    "error",
                    {
                        "code": "rate_limited",
                        "message": _("Demasiados mensajes en esta conversación."),
                        "retry_after": limited["retry_after_s"],
                    },
                )
                return
            reply = body.get("reply")
            if reply and not streamed:
                yield _event("token", {"text": reply["text"]})
            yield _event("citations", {"citations": reply["citations"] if reply else []})
            yield _event("done", body)
            return
    finally:
        if not worker.done():
            # The client left: the pipeline finishes in its thread and stores the reply.
            worker.add_done_callback(lambda _f: None)


def stream_response(
    agent: Agent,
    inbound: Inbound,
    present: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        _events(agent, inbound, present), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
