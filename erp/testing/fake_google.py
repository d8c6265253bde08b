"""A fake Generative Language API (Google AI Studio) on loopback, for driving the real SDK.

Routes `/v1/` and `/v1beta/` `models/{model}:generateContent`, `:streamGenerateContent`
(`alt=sse`: `data: {...}\\r\\n\\r\\n` events) and `:batchEmbedContents`. Generation calls
consume a queue of scripted behaviours (the same behaviour serves either endpoint: a reply is
one JSON body or, when streamed, SSE chunks); when the queue is empty the default reply
answers. Every request is recorded.

    def test_x(fake_google):
        fake_google.push(fake_google.unavailable(), fake_google.reply("hola"))
        ...
        assert fake_google.generate_requests[1]["contents"][0]["role"] == "user"
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from erp.testing.fake_http import FakeRequest, FakeResponse, FakeServer

ROUTE = r"/(?:v1|v1beta)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)"

NO_SYSTEM_INSTRUCTION_ERROR = {
    "error": {
        "code": 400,
        "message": "Developer instruction is not enabled for models/gemma-3-27b-it",
        "status": "INVALID_ARGUMENT",
    }
}
INVALID_KEY_ERROR = {
    "error": {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
            }
        ],
    }
}
_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}
_STATUS.update({500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"})


@dataclass
class Behaviour:
    """One scripted answer. `body` is the response JSON (status 200 unless `status`);
    `chunks` are the stream events (a reply builds them by splitting its text)."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    chunks: list[dict[str, Any]] | None = None
    chunk_delay: float = 0.0
    delay: float = 0.0  # before the status line; longer than the client timeout = a hang
    raw: bytes | None = None  # a non-JSON body (broken server)


def _usage(input_tokens: int | None, output_tokens: int | None) -> dict[str, int] | None:
    if input_tokens is None and output_tokens is None:
        return None
    i, o = input_tokens or 0, output_tokens or 0
    return {"promptTokenCount": i, "candidatesTokenCount": o, "totalTokenCount": i + o}


def _split(text: str, n: int) -> list[str]:
    if n <= 1 or len(text) <= 1:
        return [text]
    size = math.ceil(len(text) / n)
    return [text[i : i + size] for i in range(0, len(text), size)]


class FakeGoogle:
    def __init__(self) -> None:
        self.server = FakeServer()
        self.queue: deque[Behaviour] = deque()
        self.embed_queue: deque[Behaviour] = deque()  # errors for batchEmbedContents
        self.default: Behaviour = self.reply("ok")
        # When set, the reply to a request the queue has nothing for, from its JSON body
        # (instead of `default`): a bench's model that answers each conversation in turn.
        self.responder: Callable[[dict[str, Any]], Behaviour] | None = None
        self.stream_sent_at: list[float] = []  # monotonic time each SSE event was written
        self._lock = threading.Lock()

    # --- lifecycle --------------------------------------------------------------------
    def start(self) -> FakeGoogle:
        self.server.start()
        self.server.route("POST", ROUTE, self._handle)
        return self

    def stop(self) -> None:
        self.server.stop()

    def reset(self) -> None:
        """Empty the queue and the recorded requests; back to the default reply."""
        with self._lock:
            self.queue.clear()
            self.embed_queue.clear()
            self.default = self.reply("ok")
            self.responder = None
            self.stream_sent_at.clear()
        self.server.requests_clear()

    @property
    def url(self) -> str:
        return self.server.url

    # --- scripting --------------------------------------------------------------------
    def push(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self.queue.extend(behaviours)

    def push_embed(self, *behaviours: Behaviour) -> None:
        """Answers for the next embedding calls (an error, or a 200 for computed vectors)."""
        with self._lock:
            self.embed_queue.extend(behaviours)

    @staticmethod
    def reply(
        text: str,
        *,
        input_tokens: int | None = 12,
        output_tokens: int | None = 7,
        finish: str = "STOP",
        thought: str | None = None,
        chunks: int = 3,
        chunk_delay: float = 0.0,
        delay: float = 0.0,
    ) -> Behaviour:
        """A text answer; streamed as `chunks` pieces `chunk_delay` apart, usage on the last."""
        usage = _usage(input_tokens, output_tokens)
        parts: list[dict[str, Any]] = [{"text": thought, "thought": True}] if thought else []
        body: dict[str, Any] = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [*parts, {"text": text}]},
                    "finishReason": finish,
                    "index": 0,
                }
            ],
            "modelVersion": "fake-1",
        }
        if usage:
            body["usageMetadata"] = usage
        events: list[dict[str, Any]] = []
        pieces = _split(text, chunks)
        for i, piece in enumerate(pieces):
            candidate: dict[str, Any] = {
                "content": {"role": "model", "parts": [{"text": piece}]},
                "index": 0,
            }
            event: dict[str, Any] = {"candidates": [candidate], "modelVersion": "fake-1"}
            if i == len(pieces) - 1:
                candidate["finishReason"] = finish
                if usage:
                    event["usageMetadata"] = usage
            events.append(event)
        return Behaviour(body=body, chunks=events, chunk_delay=chunk_delay, delay=delay)

    @classmethod
    def reply_json(cls, data: Any, **kw: Any) -> Behaviour:
        return cls.reply(json.dumps(data, ensure_ascii=False), **kw)

    @staticmethod
    def error(status: int, message: str = "", *, details: list[Any] | None = None) -> Behaviour:
        error: dict[str, Any] = {
            "code": status,
            "message": message or f"fake error {status}",
            "status": _STATUS.get(status, "UNKNOWN"),
        }
        if details:
            error["details"] = details
        return Behaviour(status=status, body={"error": error})

    @classmethod
    def rate_limited(cls, retry_delay: str | None = "0.2s") -> Behaviour:
        details: list[Any] = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}],
            }
        ]
        if retry_delay is not None:
            details.append(
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
            )
        return cls.error(429, "You exceeded your current quota", details=details)

    @classmethod
    def unavailable(cls) -> Behaviour:
        return cls.error(503, "The model is overloaded. Please try again later.")

    @classmethod
    def internal(cls) -> Behaviour:
        return cls.error(500, "An internal error has occurred.")

    @staticmethod
    def no_system_instruction() -> Behaviour:
        return Behaviour(status=400, body=NO_SYSTEM_INSTRUCTION_ERROR)

    @staticmethod
    def invalid_key() -> Behaviour:
        return Behaviour(status=400, body=INVALID_KEY_ERROR)

    @classmethod
    def hang(cls, seconds: float) -> Behaviour:
        """Answers only after `seconds` (use more than the client timeout)."""
        behaviour = cls.reply("tarde")
        behaviour.delay = seconds
        return behaviour

    @classmethod
    def broken_json(cls, text: str = '{"action": "respond", "answer": "Hola') -> Behaviour:
        """Model text that is not valid JSON despite constrained decoding."""
        return cls.reply(text)

    @staticmethod
    def safety() -> Behaviour:
        body = {"candidates": [{"finishReason": "SAFETY", "index": 0}]}
        return Behaviour(body=body, chunks=[body])

    @staticmethod
    def empty() -> Behaviour:
        body = {"candidates": [], "usageMetadata": {"promptTokenCount": 5}}
        return Behaviour(body=body, chunks=[body])

    @staticmethod
    def prompt_blocked() -> Behaviour:
        body = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}
        return Behaviour(body=body, chunks=[body])

    # --- inspection -------------------------------------------------------------------
    @property
    def generate_requests(self) -> list[dict[str, Any]]:
        """Bodies of generateContent and streamGenerateContent requests, in order."""
        return [
            r.json()
            for r in self.server.requests
            if r.path.endswith((":generateContent", ":streamGenerateContent"))
        ]

    @property
    def requests(self) -> list[FakeRequest]:
        return self.server.requests_snapshot()

    # --- serving ----------------------------------------------------------------------
    def _next(self, request: FakeRequest) -> Behaviour:
        with self._lock:
            if self.queue:
                return self.queue.popleft()
            responder = self.responder
        return self.default if responder is None else responder(request.json())

    def _handle(self, request: FakeRequest) -> FakeResponse:
        method = request.params["method"]
        if method == "batchEmbedContents":
            return self._embed(request)
        if method not in ("generateContent", "streamGenerateContent"):
            return FakeResponse.json({"error": {"code": 404, "message": method}}, status=404)
        behaviour = self._next(request)
        if behaviour.raw is not None:
            return FakeResponse(
                status=behaviour.status,
                body=behaviour.raw,
                headers={"Content-Type": "application/json"},
                delay=behaviour.delay,
            )
        streaming = method == "streamGenerateContent" and behaviour.status == 200
        if not streaming:
            return FakeResponse.json(behaviour.body, status=behaviour.status, delay=behaviour.delay)
        events = behaviour.chunks if behaviour.chunks is not None else [behaviour.body]
        return FakeResponse(
            status=200,
            chunks=self._sse(events, behaviour.chunk_delay),
            delay=behaviour.delay,
            headers={"Content-Type": "text/event-stream"},
        )

    def _sse(self, events: list[dict[str, Any]], pace: float) -> Iterator[bytes]:
        for i, event in enumerate(events):
            if i and pace:
                time.sleep(pace)
            self.stream_sent_at.append(time.monotonic())
            yield f"data: {json.dumps(event)}\r\n\r\n".encode()

    def _embed(self, request: FakeRequest) -> FakeResponse:
        with self._lock:
            scripted = self.embed_queue.popleft() if self.embed_queue else None
        if scripted is not None and scripted.status != 200:
            return FakeResponse.json(scripted.body, status=scripted.status, delay=scripted.delay)
        delay = scripted.delay if scripted is not None else 0.0  # a slow 200 (`hang`)
        embeddings = []
        for item in request.json().get("requests", []):
            text = "".join(p.get("text", "") for p in item["content"]["parts"])
            dims = int(item.get("outputDimensionality") or 8)
            digest = hashlib.sha256(text.encode()).digest()
            values = [(digest[i % len(digest)] - 128) / 128 for i in range(dims)]
            embeddings.append({"values": values})
        return FakeResponse.json({"embeddings": embeddings}, delay=delay)


@pytest.fixture(scope="session")
def _fake_google_server() -> Iterator[FakeGoogle]:
    fake = FakeGoogle().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def fake_google(_fake_google_server: FakeGoogle, settings: Any) -> Iterator[FakeGoogle]:
    """The fake Google AI Studio, reset; settings point the Google provider at it."""
    from erp.llm.providers import google

    fake = _fake_google_server
    fake.reset()
    settings.GOOGLE_AI_BASE_URL = fake.url
    settings.GOOGLE_AI_API_KEY = "fake-google-key"
    settings.LLM_DEFAULT_MODEL = "gemma-4-26b-a4b-it"
    google.reset_state()
    try:
        yield fake
    finally:
        fake.reset()
        google.reset_state()
