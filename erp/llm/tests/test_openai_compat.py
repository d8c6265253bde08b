"""OpenAICompatProvider against the fake OpenAI-compatible server (real HTTP on loopback)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from erp.llm import errors
from erp.llm.providers.openai_compat import OpenAICompatProvider, json_schema_lower
from erp.llm.types import LlmRequest, LlmResult, Message, TextDelta
from erp.testing.fake_openai import ChatReply, FakeOpenAI

ACTION_SCHEMA = {
    "type": "OBJECT",
    "properties": {
        "action": {"type": "STRING", "enum": ["respond", "escalate"]},
        "answer": {"type": "STRING"},
        "reason": {"type": "STRING", "nullable": True},
    },
    "required": ["action", "answer", "reason"],
    "propertyOrdering": ["action", "answer", "reason"],
}


def ask(text: str = "¿Abren el sábado?", **kw: Any) -> LlmRequest:
    return LlmRequest(messages=[Message("user", text)], **kw)


def provider() -> OpenAICompatProvider:
    return OpenAICompatProvider.from_settings()


def test_not_configured_without_base_url(settings: Any) -> None:
    settings.OPENAI_BASE_URL = None
    with pytest.raises(errors.NotConfigured):
        OpenAICompatProvider.from_settings()


def test_generate_sends_system_schema_and_sampling_and_parses_answer(
    fake_openai: FakeOpenAI, settings: Any
) -> None:
    settings.LLM_DEFAULT_MODEL = "gemma3:4b"
    fake_openai.script(ChatReply('{"action": "respond", "answer": "Sí, de 9 a 14."}'))

    result = provider().generate(
        LlmRequest(
            system="Eres la recepcionista.",
            messages=[
                Message("user", "¿Abren el sábado?"),
                Message("assistant", '{"action": "search"}'),
                Message("tool", "Sábados 9-14 h", name="horarios"),
            ],
            json_schema=ACTION_SCHEMA,
            temperature=0.2,
            top_k=40,
            max_output_tokens=256,
        )
    )

    sent = fake_openai.chat_requests[0]
    assert sent["model"] == "gemma3:4b"
    assert sent["messages"] == [
        {"role": "system", "content": "Eres la recepcionista."},
        {"role": "user", "content": "¿Abren el sábado?"},
        {"role": "assistant", "content": '{"action": "search"}'},
        {"role": "user", "content": "Resultado de la herramienta horarios:\nSábados 9-14 h"},
    ]
    assert (sent["temperature"], sent["top_k"], sent["max_tokens"]) == (0.2, 40, 256)
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "action",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["respond", "escalate"]},
                    "answer": {"type": "string"},
                    "reason": {"type": ["string", "null"]},
                },
                "required": ["action", "answer", "reason"],
                "additionalProperties": False,
            },
        },
    }
    assert "stream" not in sent
    assert fake_openai.server.requests[0].header("authorization") == "Bearer sk-test-fake"
    assert result.parsed == {"action": "respond", "answer": "Sí, de 9 a 14."}
    assert result.text == '{"action": "respond", "answer": "Sí, de 9 a 14."}'
    assert (result.input_tokens, result.output_tokens) == (12, 7)
    assert (result.finish_reason, result.provider, result.model) == ("stop", "openai", "gemma3:4b")


def test_optional_fields_are_left_out_and_no_key_means_no_auth_header(
    fake_openai: FakeOpenAI, settings: Any
) -> None:
    settings.OPENAI_API_KEY = None
    settings.OPENAI_DEFAULT_MODEL = "qwen3:8b"
    fake_openai.script(ChatReply("Hola"))

    result = provider().generate(ask())

    sent = fake_openai.chat_requests[0]
    assert sent == {
        "model": "qwen3:8b",
        "messages": [{"role": "user", "content": "¿Abren el sábado?"}],
    }
    assert fake_openai.server.requests[0].header("authorization") is None
    assert (result.text, result.parsed) == ("Hola", None)


def test_consecutive_user_turns_are_merged(fake_openai: FakeOpenAI) -> None:
    provider().generate(
        LlmRequest(messages=[Message("user", "Hola"), Message("tool", "{}", name="buscar")])
    )
    assert fake_openai.chat_requests[0]["messages"] == [
        {"role": "user", "content": "Hola\n\nResultado de la herramienta buscar:\n{}"}
    ]


def test_length_finish_is_max_tokens_and_broken_json_is_not_parsed(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(
        ChatReply('{"action": "respond", "answer": "Lar', finish_reason="length"),
        fake_openai.broken_json(),
    )
    truncated = provider().generate(ask(json_schema=ACTION_SCHEMA))
    broken = provider().generate(ask(json_schema=ACTION_SCHEMA))

    assert truncated.finish_reason == "max_tokens"
    assert truncated.parsed is None and truncated.metadata["json_invalid"] is True
    assert broken.text == '{"action": "respond", "answer": "Hola'
    assert broken.parsed is None


def test_content_filter_is_blocked(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(fake_openai.content_filter())
    with pytest.raises(errors.Blocked):
        provider().generate(ask())
    with pytest.raises(errors.Blocked):
        list(provider().stream(ask()))


def test_missing_usage_counts_zero_and_is_flagged(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(ChatReply("Hola", include_usage=False))
    result = provider().generate(ask())
    assert (result.input_tokens, result.output_tokens) == (0, 0)
    assert result.metadata["usage_missing"] is True


def test_stream_yields_deltas_before_the_last_chunk_and_usage_from_final_chunk(
    fake_openai: FakeOpenAI,
) -> None:
    answer = '{"action": "respond", "answer": "Abrimos de 9 a 14."}'
    pieces = [answer[i : i + 10] for i in range(0, len(answer), 10)]
    delay = 0.08
    fake_openai.script(
        ChatReply(answer, pieces=pieces, chunk_delay=delay, prompt_tokens=30, completion_tokens=11)
    )

    started = time.monotonic()
    items: list[tuple[float, TextDelta | LlmResult]] = [
        (time.monotonic() - started, item)
        for item in provider().stream(ask(json_schema=ACTION_SCHEMA))
    ]

    sent = fake_openai.chat_requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    deltas = [item.text for _t, item in items if isinstance(item, TextDelta)]
    assert deltas == pieces
    # chunks: role, pieces..., finish, usage: the last one leaves len(pieces) + 2 delays in
    total_server_time = (len(pieces) + 2) * delay
    first_delta_at = items[0][0]
    assert first_delta_at < total_server_time - 3 * delay
    last_at, result = items[-1]
    assert isinstance(result, LlmResult)
    assert last_at >= total_server_time - delay
    assert result.text == answer
    assert result.parsed == {"action": "respond", "answer": "Abrimos de 9 a 14."}
    assert (result.input_tokens, result.output_tokens, result.finish_reason) == (30, 11, "stop")


def test_stream_cut_before_finish_is_unavailable(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(ChatReply("Hola a todos", truncate_stream=True))
    stream = provider().stream(ask())
    assert next(stream) == TextDelta("Hola")
    with pytest.raises(errors.Unavailable):
        list(stream)


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, errors.BadRequest),
        (404, errors.BadRequest),
        (422, errors.BadRequest),
        (401, errors.AuthFailed),
        (403, errors.AuthFailed),
        (500, errors.Unavailable),
        (503, errors.Unavailable),
    ],
)
def test_status_errors_are_typed(
    fake_openai: FakeOpenAI, status: int, error_type: type[errors.LlmError]
) -> None:
    fake_openai.script(fake_openai.error(status, "nope"))
    with pytest.raises(error_type) as caught:
        provider().generate(ask())
    assert f"HTTP {status}" in str(caught.value)
    assert caught.value.provider == "openai"
    with pytest.raises(error_type):
        list(provider().stream(ask()))


def test_rate_limited_carries_retry_after(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(fake_openai.error(429, "slow down", retry_after="7"))
    with pytest.raises(errors.RateLimited) as caught:
        provider().generate(ask())
    assert caught.value.retry_after == 7.0
    assert caught.value.retryable is True


def test_secret_key_is_not_in_error_messages(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(fake_openai.error(401, "Incorrect API key"))
    with pytest.raises(errors.AuthFailed) as caught:
        provider().generate(ask())
    assert "sk-test-fake" not in str(caught.value)


def test_hung_server_times_out_within_the_request_timeout(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(fake_openai.hang(30.0))
    started = time.monotonic()
    with pytest.raises(errors.Timeout):
        provider().generate(ask(timeout_s=0.3))
    assert time.monotonic() - started < 5  # the server would take 30 s


def test_stream_that_stalls_times_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(ChatReply("Hola a todos", chunk_delay=1.0))
    stream = provider().stream(ask(timeout_s=0.3))
    with pytest.raises(errors.Timeout):
        list(stream)


def test_connection_refused_is_unavailable(settings: Any) -> None:
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    with pytest.raises(errors.Unavailable):
        provider().generate(ask(timeout_s=2))


def test_settings_are_read_per_provider_so_a_new_base_url_takes_effect(
    fake_openai: FakeOpenAI, settings: Any
) -> None:
    provider().generate(ask())
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    with pytest.raises(errors.Unavailable):
        provider().generate(ask(timeout_s=2))
    assert len(fake_openai.chat_requests) == 1


def test_embeddings_batch_in_order_with_dimensions(fake_openai: FakeOpenAI) -> None:
    result = provider().embed(
        ["uno dos", "tres"], model="nomic-embed-text", dimensions=16, task="passage"
    )

    assert fake_openai.embedding_requests == [
        {"model": "nomic-embed-text", "input": ["uno dos", "tres"], "dimensions": 16}
    ]
    assert len(result.vectors) == 2 and all(len(v) == 16 for v in result.vectors)
    again = provider().embed(["tres"], model="nomic-embed-text", dimensions=16, task="query")
    assert again.vectors[0] == result.vectors[1]  # sorted by index, not arrival order
    assert result.vectors[0] != result.vectors[1]
    assert (result.input_tokens, result.provider, result.model) == (3, "openai", "nomic-embed-text")


def test_embedding_errors_are_typed(fake_openai: FakeOpenAI) -> None:
    fake_openai.script_embeddings(fake_openai.error(429, retry_after="2"), None)
    with pytest.raises(errors.RateLimited) as caught:
        provider().embed(["x"], model="m", dimensions=None, task="query")
    assert caught.value.retry_after == 2.0
    result = provider().embed(["x"], model="m", dimensions=None, task="query")
    assert "dimensions" not in fake_openai.embedding_requests[-1]
    assert len(result.vectors[0]) == 8


def test_json_schema_lower_handles_nesting() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "items": {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {}}},
            "n": {"type": "INTEGER", "nullable": True},
        },
    }
    assert json_schema_lower(schema) == {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            "n": {"type": ["integer", "null"]},
        },
        "additionalProperties": False,
    }


def test_strict_only_when_every_property_is_required(fake_openai: FakeOpenAI) -> None:
    optional_args = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["respond", "search"]},
            "answer": {"type": "string"},
            "query": {"type": "string"},
        },
        "required": ["action"],
    }
    provider().generate(ask(json_schema=optional_args))
    response_format = fake_openai.chat_requests[0]["response_format"]["json_schema"]
    # OpenAI rejects strict schemas with optional properties; the schema still constrains.
    assert response_format["strict"] is False
    assert response_format["schema"]["properties"]["query"] == {"type": "string"}
