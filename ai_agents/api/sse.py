"""Server-sent events for POST /api/v1/agents/{id}/messages with `Accept: text/event-stream`.

Events: `token` {"text"} as the model writes the answer, `citations` {"citations"}, `done`
(the same body as the JSON response) and `error` {"code", "message"}. The pipeline runs in a
worker thread (it may wait for the conversation's turn and uses the sync ORM); an async generator
relays its deltas because Django serves a synchronous iterator under ASGI only after consuming
it whole, which would hold every token back until the end. If
the client hangs up, the pipeline still finishes and stores the reply. The view waits for the
pipeline's first event before answering, so a rate-limited message (decided before any model
call) is a 429 JSON with Retry-After, never an `error` event inside a 200.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.http import StreamingHttpResponse
from django.utils.translation import gettext as _
from rest_framework.renderers import BaseRenderer

from ai_agents.conversations.engine import Inbound, message_process
from ai_agents.conversations.turn import TurnResult
from ai_agents.models import Agent

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


Present = Callable[[dict[str, Any]], dict[str, Any]]


class _Run:
    """The pipeline in a worker thread, its events in a thread-safe queue: ("token", text),
    then ("result", Outcome) or ("fail", None). `present` shapes the result for another
    audience (the web chat visitor); it runs in the pipeline's thread, so it may read the
    database."""

    def __init__(self, agent: Agent, inbound: Inbound, present: Present | None = None) -> None:
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.thread = threading.Thread(
            target=self._work, args=(agent, inbound, present), daemon=True
        )
        self.thread.start()

    def _work(self, agent: Agent, inbound: Inbound, present: Present | None) -> None:
        try:
            result = message_process(
                agent=agent,
                inbound=inbound,
                on_delta=lambda text: self.events.put(("token", text)),
            )
            body = present(result.as_record()) if present is not None else result.as_api_body()
            self.events.put(("result", Outcome(result=result, body=body)))
        except Exception:
            logger.exception("pipeline.stream_failed")
            self.events.put(("fail", None))
        finally:
            connection.close()

    async def next(self) -> tuple[str, Any]:
        # A thread hop per event: the queue is filled by the pipeline's thread.
        return await asyncio.to_thread(self.events.get)


async def _events(
    run: _Run, first: tuple[str, Any] | None = None, pace_s: float = 0.0
) -> AsyncIterator[str]:
    """`pace_s`: the agent's `streaming_chunk_delay_ms`, a pause after each token event (a
    steadier "typing" effect); the pipeline does not wait for it, its deltas queue up."""
    kind, value = first if first is not None else await run.next()
    streamed = False
    while True:
        if kind == "token":
            streamed = True
            yield _event("token", {"text": value})
            if pace_s:
                await asyncio.sleep(pace_s)
            kind, value = await run.next()
            continue
        if kind == "fail":
            yield _event(
                "error",
                {"code": "internal_error", "message": _("No se pudo procesar el mensaje.")},
            )
            return
        outcome: Outcome = value
        result, body = outcome.result, outcome.body
        limited = result.rate_limited
        if limited is not None:  # a stream started before the limit was known
            yield _event(
                "error",
                {
                    "code": "rate_limited",
                    "message": _("Demasiados mensajes en esta conversación."),
                    "retry_after": limited["retry_after_s"],
                },
            )
            return
        body.pop("rate_limited", None)  # the web chat's shape carries it (None here)
        if result.reply is not None and not streamed:
            yield _event("token", {"text": result.reply.text})
        cited = body["reply"]["citations"] if body.get("reply") else []
        yield _event("citations", {"citations": cited})
        yield _event("done", body)
        return


def _streaming(events: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


@dataclass(frozen=True)
class Outcome:
    """The pipeline's result and the body the stream ends with (`done`): the API's, or the one
    `present` shaped."""

    result: TurnResult
    body: dict[str, Any]


@dataclass(frozen=True)
class Started:
    """Either the stream to return, or the pipeline's result when it ended rate limited
    before any token (the view answers 429 JSON with Retry-After, like without SSE)."""

    response: StreamingHttpResponse | None = None
    limited: TurnResult | None = None


def stream_start(agent: Agent, inbound: Inbound) -> Started:
    """Starts the pipeline and waits for its first event before choosing the response: the
    limits are decided before any model call, so a limited message is known before the
    stream would start (its first event is the result). Otherwise the stream begins with the
    first token (the headers leave with it; no later than without the wait)."""
    run = _Run(agent, inbound)
    first = run.events.get()
    if first[0] == "result" and first[1].result.rate_limited is not None:
        return Started(limited=first[1].result)
    return Started(response=_streaming(_events(run, first, _pace(agent))))


def stream_response(
    agent: Agent, inbound: Inbound, present: Present | None = None
) -> StreamingHttpResponse:
    """The stream at once (the web chat: its visitor-facing result has no rate-limit field)."""
    return _streaming(_events(_Run(agent, inbound, present), pace_s=_pace(agent)))


def _pace(agent: Agent) -> float:
    return int(agent.processing["streaming_chunk_delay_ms"]) / 1000
