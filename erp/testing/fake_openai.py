"""A scriptable fake OpenAI-compatible server (`/v1/chat/completions`, `/v1/embeddings`,
`/v1/audio/transcriptions`: `transcription_script` holds transcripts or errors).

Real HTTP on loopback (on top of `FakeServer`), so `OpenAICompatProvider` runs unchanged.
Each chat call consumes the next scripted reply (the last one repeats); one `ChatReply`
serves both modes: a JSON completion, or SSE chunks when the request says `"stream": true`
(with the extra usage chunk when `stream_options.include_usage` is set, then `[DONE]`).

    def test_x(fake_openai):
        fake_openai.script(ChatReply('{"action": "respond", "answer": "Hola"}'))
        fake_openai.script(fake_openai.error(503), ChatReply("ok"))   # fails once, then ok
        ...
        assert fake_openai.chat_requests[0]["response_format"]["type"] == "json_schema"
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from erp.testing.fake_http import FakeRequest, FakeResponse, FakeServer

DEFAULT_ANSWER = '{"action": "respond", "answer": "Hola, ¿en qué le ayudo?"}'
DEFAULT_DIMENSIONS = 8


@dataclass
class ChatReply:
    content: str = DEFAULT_ANSWER
    finish_reason: str = "stop"
    prompt_tokens: int = 12
    completion_tokens: int = 7
    pieces: list[str] | None = None  # stream deltas; default: the content in 4-char pieces
    chunk_delay: float = 0.0  # seconds between stream chunks
    delay: float = 0.0  # seconds before the status line (latency, or a hang)
    include_usage: bool = True  # False: the server omits usage (some servers do)
    truncate_stream: bool = False  # close the stream without a finish_reason nor [DONE]


@dataclass
class ErrorReply:
    status: int
    message: str = "fake error"
    code: str | None = None
    retry_after: str | None = None
    delay: float = 0.0


Reply = ChatReply | ErrorReply


@dataclass
class FakeOpenAI:
    server: FakeServer
    chat_script: list[Reply] = field(default_factory=lambda: [ChatReply()])
    embedding_script: list[ErrorReply | None] = field(default_factory=lambda: [None])
    transcription_script: list[str | ErrorReply] = field(default_factory=lambda: ["Hola"])
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.server.route("POST", r"/v1/chat/completions", self._chat)
        self.server.route("POST", r"/v1/embeddings", self._embeddings)
        self.server.route("POST", r"/v1/audio/transcriptions", self._transcribe)

    # --- scripting ----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"{self.server.url}/v1"

    def script(self, *replies: Reply) -> None:
        """The next chat calls answer these in turn; the last one then repeats."""
        with self._lock:
            self.chat_script = list(replies)

    def script_embeddings(self, *replies: ErrorReply | None) -> None:
        """Embedding calls: `None` answers normally, an `ErrorReply` fails."""
        with self._lock:
            self.embedding_script = list(replies)

    @staticmethod
    def error(
        status: int, message: str = "fake error", *, retry_after: str | None = None, **kw: Any
    ) -> ErrorReply:
        return ErrorReply(status=status, message=message, retry_after=retry_after, **kw)

    @staticmethod
    def hang(seconds: float = 5.0) -> ChatReply:
        return ChatReply(delay=seconds)

    @staticmethod
    def broken_json() -> ChatReply:
        return ChatReply(content='{"action": "respond", "answer": "Hola', finish_reason="stop")

    @staticmethod
    def content_filter() -> ChatReply:
        return ChatReply(content="", finish_reason="content_filter", completion_tokens=0)

    # --- inspection ---------------------------------------------------------------------
    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.server.requests_to(r"/v1/chat/completions$")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.server.requests_to(r"/v1/embeddings$")]

    # --- handlers -----------------------------------------------------------------------
    def _next(self, script: list[Any]) -> Any:
        with self._lock:
            return script.pop(0) if len(script) > 1 else script[0]

    @property
    def transcription_requests(self) -> list[FakeRequest]:
        """Multipart bodies (`file`, `model`), raw."""
        return self.server.requests_to(r"/v1/audio/transcriptions$")

    def _transcribe(self, request: FakeRequest) -> FakeResponse:
        reply = self._next(self.transcription_script)
        if isinstance(reply, ErrorReply):
            return _error_response(reply)
        return FakeResponse.json({"text": reply})

    def _chat(self, request: FakeRequest) -> FakeResponse:
        reply = self._next(self.chat_script)
        if isinstance(reply, ErrorReply):
            return _error_response(reply)
        body = request.json() or {}
        model = body.get("model") or "fake-model"
        completion_id = f"chatcmpl-{next(self._ids)}"
        usage = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        if not body.get("stream"):
            data: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                    }
                ],
            }
            if reply.include_usage:
                data["usage"] = usage
            return FakeResponse.json(data, delay=reply.delay)

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": choices,
                **extra,
            }

        pieces = reply.pieces
        if pieces is None:
            pieces = [reply.content[i : i + 4] for i in range(0, len(reply.content), 4)]
        events = [chunk([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}])]
        events += [
            chunk([{"index": 0, "delta": {"content": p}, "finish_reason": None}]) for p in pieces
        ]
        if reply.truncate_stream:
            return FakeResponse.sse(events, chunk_delay=reply.chunk_delay, delay=reply.delay)
        events.append(chunk([{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]))
        wants_usage = (body.get("stream_options") or {}).get("include_usage")
        if wants_usage and reply.include_usage:
            events.append(chunk([], usage=usage))
        return FakeResponse.sse(
            events, chunk_delay=reply.chunk_delay, delay=reply.delay, done="[DONE]"
        )

    def _embeddings(self, request: FakeRequest) -> FakeResponse:
        failure = self._next(self.embedding_script)
        if failure is not None:
            return _error_response(failure)
        body = request.json() or {}
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts:
            return _error_response(ErrorReply(400, "input must be a non-empty list"))
        dims = int(body.get("dimensions") or DEFAULT_DIMENSIONS)
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(str(t), dims)}
            for i, t in enumerate(texts)
        ]
        data.reverse()  # servers may answer out of order; clients must sort by index
        tokens = sum(len(str(t).split()) for t in texts)
        return FakeResponse.json(
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )


def fake_vector(text: str, dims: int) -> list[float]:
    """A deterministic unit vector per text (same text, same vector)."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dims)]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


def _error_response(reply: ErrorReply) -> FakeResponse:
    headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
    error = {"message": reply.message, "type": "fake_error", "code": reply.code}
    return FakeResponse.json(
        {"error": error}, status=reply.status, headers=headers, delay=reply.delay
    )


@pytest.fixture(scope="session")
def _fake_openai_server() -> Iterator[FakeServer]:
    # One server per test session: stopping a FakeServer waits for its poll interval.
    with FakeServer() as server:
        yield server


@pytest.fixture
def fake_openai(_fake_openai_server: FakeServer, settings: Any) -> FakeOpenAI:
    """A fake OpenAI-compatible server, fresh script and request log per test;
    `settings.OPENAI_BASE_URL` (and a test key) point at it."""
    server = _fake_openai_server
    server.requests_clear()
    fake = FakeOpenAI(server)
    settings.OPENAI_BASE_URL = fake.base_url
    settings.OPENAI_API_KEY = "sk-test-fake"
    return fake
