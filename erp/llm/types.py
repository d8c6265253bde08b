"""The provider protocol shared by every LLM provider and the gateway.

A provider turns an `LlmRequest` into an `LlmResult` (or a stream of `TextDelta`s ending in
one), raising only `erp.llm.errors` types. Providers know nothing about tenants, retries or
usage: the gateway (`erp.llm.gateway`) adds those around them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    name: str | None = None  # tool name, for role="tool"


@dataclass(frozen=True)
class Passage:
    """A retrieved passage the caller put in the prompt (the offline provider quotes it)."""

    text: str
    source: str


@dataclass(frozen=True)
class LlmRequest:
    messages: Sequence[Message]
    system: str = ""
    json_schema: dict[str, Any] | None = None  # constrained decoding when set
    temperature: float | None = None
    top_k: int | None = None
    max_output_tokens: int | None = None
    timeout_s: float = 30.0  # per attempt
    model: str | None = None  # provider default when None
    passages: Sequence[Passage] = ()  # best first; informational for real models


@dataclass(frozen=True)
class LlmResult:
    text: str
    parsed: Any | None  # the decoded JSON when a schema was given and it parsed
    finish_reason: str  # "stop" | "max_tokens" | "safety" | "other"
    input_tokens: int
    output_tokens: int
    latency_ms: int
    provider: str
    model: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class EmbeddingResult:
    vectors: list[list[float]]
    input_tokens: int
    latency_ms: int
    provider: str
    model: str


EmbeddingTask = Literal["query", "passage"]
MediaTask = Literal["transcribe", "describe"]


@dataclass(frozen=True)
class MediaRequest:
    """A voice note to transcribe or an image to describe (bytes in memory, small: WhatsApp
    audio is at most 16 MB). `prompt` says what to do with it."""

    data: bytes
    mime_type: str
    task: MediaTask
    prompt: str
    timeout_s: float = 30.0
    model: str | None = None


class Provider(Protocol):
    name: str

    def generate(self, request: LlmRequest) -> LlmResult: ...

    def stream(self, request: LlmRequest) -> Iterator[TextDelta | LlmResult]:
        """Text deltas as they arrive; the last item is the complete `LlmResult`."""
        ...


class MediaProvider(Protocol):
    name: str

    def media_model(self, request: MediaRequest) -> str:
        """The model that will read it (the request's, else the provider's for the task)."""
        ...

    def media_text(self, request: MediaRequest) -> LlmResult:
        """The transcript or description; `Unsupported` when the provider cannot read it."""
        ...


class EmbeddingProvider(Protocol):
    name: str

    def embed(
        self,
        texts: Sequence[str],
        *,
        model: str,
        dimensions: int | None,
        task: EmbeddingTask,
        timeout_s: float = 30.0,
    ) -> EmbeddingResult: ...
