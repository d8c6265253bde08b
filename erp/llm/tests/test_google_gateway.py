"""The gateway driving the real google-genai SDK against the fake Generative Language API."""

from __future__ import annotations

import time
from typing import Any

import pytest

from erp.llm.actions import ActionSpec, answer_deltas, build_action_schema, parse_action
from erp.llm.errors import (
    AuthFailed,
    BadRequest,
    Blocked,
    RateLimited,
    Timeout,
    Unavailable,
)
from erp.llm.gateway import (
    CallContext,
    RetryPolicy,
    llm_generate,
    llm_stream,
)
from erp.llm.tests.google_kit import FAST, MODEL, ask, rows
from erp.llm.types import LlmRequest, LlmResult, Message, TextDelta
from erp.testing.fake_google import FakeGoogle

ACTIONS = [
    ActionSpec("respond", "contestar al cliente"),
    ActionSpec(
        "buscar",
        "buscar en el buzón",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
]
COMMON = {"answer": {"type": "string"}, "confidence": {"type": "number"}}


# --- request shape ------------------------------------------------------------------------


def test_schema_is_sent_as_response_schema_and_parsed(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.reply_json({"action": "buscar", "query": "Hetzner"}))
    schema = build_action_schema(ACTIONS, COMMON)

    result = llm_generate(ask(json_schema=schema), context=ctx, retry=FAST)

    sent = fake_google.generate_requests[0]
    config = sent["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["type"] == "OBJECT"
    assert config["responseSchema"]["properties"]["action"]["enum"] == ["respond", "buscar"]
    assert config["responseSchema"]["properties"]["query"] == {"type": "STRING"}
    assert config["responseSchema"]["property_ordering"] == [
        "action",
        "answer",
        "confidence",
        "query",
    ]
    assert sent["systemInstruction"]["parts"][0]["text"] == "Eres la panadería."
    assert result.parsed == {"action": "buscar", "query": "Hetzner"}
    assert parse_action(result.parsed, ACTIONS).args == {"query": "Hetzner"}
    assert fake_google.requests[0].path == f"/v1beta/models/{MODEL}:generateContent"
    assert fake_google.requests[0].header("x-goog-api-key") == "fake-google-key"


def test_roles_map_to_gemini_turns(fake_google: FakeGoogle, ctx: CallContext):
    request = LlmRequest(
        messages=[
            Message("user", "hola"),
            Message("assistant", '{"action": "buscar", "query": "pan"}'),
            Message("tool", "3 resultados", name="buscar"),
        ]
    )
    llm_generate(request, context=ctx, retry=FAST)

    contents = fake_google.generate_requests[0]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[2]["parts"][0]["text"] == "[Resultado de la herramienta buscar]\n3 resultados"
    assert "systemInstruction" not in fake_google.generate_requests[0]


def test_system_instruction_fallback_is_remembered_per_model(
    fake_google: FakeGoogle, ctx: CallContext
):
    fake_google.push(fake_google.no_system_instruction(), fake_google.reply("Sí, de 9 a 17."))

    first = llm_generate(ask(), context=ctx, retry=FAST)
    second = llm_generate(ask("¿Y el domingo?"), context=ctx, retry=FAST)

    sent = fake_google.generate_requests
    assert len(sent) == 3
    assert "systemInstruction" in sent[0]
    assert "systemInstruction" not in sent[1]
    assert sent[1]["contents"][0]["parts"][0]["text"] == "Eres la panadería.\n\n¿Abren el sábado?"
    assert "systemInstruction" not in sent[2]  # straight to the folded form
    assert sent[2]["contents"][0]["parts"][0]["text"] == "Eres la panadería.\n\n¿Y el domingo?"
    assert first.text == "Sí, de 9 a 17."
    assert second.text == "ok"
    # another model still gets a real system instruction
    llm_generate(ask(model="gemini-2.5-flash"), context=ctx, retry=FAST)
    assert "systemInstruction" in fake_google.generate_requests[3]


def test_system_instruction_fallback_when_streaming(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.no_system_instruction(), fake_google.reply("hola"))

    events = list(llm_stream(ask(), context=ctx, retry=FAST))

    assert events[-1].text == "hola"
    assert "systemInstruction" not in fake_google.generate_requests[1]
    assert len(rows(ctx.tenant)) == 1


# --- retries ------------------------------------------------------------------------------


def test_503_is_retried_three_times_then_unavailable(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.default = fake_google.unavailable()
    policy = RetryPolicy(timeout_s=5, attempts=4, base_delay_s=0.05, factor=2, max_delay_s=1)

    started = time.monotonic()
    with pytest.raises(Unavailable):
        llm_generate(ask(), context=ctx, retry=policy)

    assert len(fake_google.generate_requests) == 4
    assert time.monotonic() - started >= 0.05 + 0.1 + 0.2  # exponential backoff
    logs = rows(ctx.tenant)
    assert len(logs) == 4
    assert all(not log.success and log.error_message.startswith("Unavailable") for log in logs)


def test_500_then_success(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.internal(), fake_google.reply("listo"))

    result = llm_generate(ask(), context=ctx, retry=FAST)

    assert result.text == "listo"
    assert [log.success for log in rows(ctx.tenant)] == [False, True]


@pytest.mark.parametrize(
    ("behaviour", "error"),
    [
        (FakeGoogle.error(400, "Invalid JSON payload"), BadRequest),
        (FakeGoogle.error(404, "models/x is not found"), BadRequest),
        (FakeGoogle.invalid_key(), AuthFailed),
        (FakeGoogle.error(403, "Permission denied"), AuthFailed),
    ],
)
def test_permanent_errors_are_not_retried(
    fake_google: FakeGoogle, ctx: CallContext, behaviour: Any, error: type
):
    fake_google.default = behaviour

    with pytest.raises(error):
        llm_generate(ask(), context=ctx, retry=FAST)

    assert len(fake_google.generate_requests) == 1
    assert len(rows(ctx.tenant)) == 1


def test_429_retry_delay_is_honoured(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.rate_limited("0.3s"), fake_google.reply("ya"))

    started = time.monotonic()
    result = llm_generate(ask(), context=ctx, retry=FAST)

    assert result.text == "ya"
    assert time.monotonic() - started >= 0.3  # not FAST's 0.01 s backoff
    assert len(fake_google.generate_requests) == 2


def test_429_retry_delay_is_capped(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.rate_limited("37s"), fake_google.reply("ya"))
    policy = RetryPolicy(timeout_s=5, attempts=2, base_delay_s=0.01, max_delay_s=0.1)

    started = time.monotonic()
    llm_generate(ask(), context=ctx, retry=policy)

    assert time.monotonic() - started < 5  # capped at 0.1 s, not the 37 s asked for


def test_429_reports_retry_after_when_attempts_run_out(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.default = fake_google.rate_limited("12s")

    with pytest.raises(RateLimited) as caught:
        llm_generate(ask(), context=ctx, retry=RetryPolicy(attempts=1))

    assert caught.value.retry_after == 12.0


def test_per_attempt_timeout(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.default = fake_google.hang(30)

    started = time.monotonic()
    with pytest.raises(Timeout):
        llm_generate(ask(), context=ctx, retry=RetryPolicy(timeout_s=0.3, attempts=1))

    assert 0.25 <= time.monotonic() - started < 5  # the server would take 30 s
    assert rows(ctx.tenant)[0].error_message.startswith("Timeout")


def test_total_deadline_bounds_all_attempts(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.default = fake_google.hang(30)
    policy = RetryPolicy(timeout_s=1.0, attempts=10, base_delay_s=0.01, deadline_s=1.5)

    started = time.monotonic()
    with pytest.raises(Timeout):
        llm_generate(ask(), context=ctx, retry=policy)

    elapsed = time.monotonic() - started
    assert elapsed < 5  # 10 attempts of 1 s would take 10 s
    assert len(fake_google.generate_requests) == 2  # the second one cut to the time left
    assert len(rows(ctx.tenant)) == 2


def test_a_spent_budget_makes_no_call(fake_google: FakeGoogle, ctx: CallContext):
    """A deadline of 0 (the pipeline's total time already used by tools or retrieval) is no
    time left, not "no deadline": no request, a Timeout at once."""
    started = time.monotonic()
    with pytest.raises(Timeout):
        llm_generate(ask(), context=ctx, retry=RetryPolicy(timeout_s=30, deadline_s=0.0))

    assert time.monotonic() - started < 3  # not the attempt's 30 s
    assert fake_google.generate_requests == []


def test_connection_refused_is_unavailable_and_retried(
    fake_google: FakeGoogle, ctx: CallContext, settings: Any
):
    settings.GOOGLE_AI_BASE_URL = "http://127.0.0.1:9"

    with pytest.raises(Unavailable):
        llm_generate(ask(), context=ctx, retry=RetryPolicy(attempts=2, base_delay_s=0.01))

    assert len(rows(ctx.tenant)) == 2


# --- answers ------------------------------------------------------------------------------


def test_broken_json_becomes_a_plain_answer(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.broken_json('{"action": "respond", "answer": "Abrimos a las 9'))
    result = llm_generate(ask(json_schema=build_action_schema(ACTIONS, COMMON)), context=ctx)
    action = parse_action(result.text, ACTIONS)

    assert result.parsed is None
    assert action.broken is True
    assert action.name == "respond"
    assert action.answer == "Abrimos a las 9"


@pytest.mark.parametrize(
    "behaviour", [FakeGoogle.safety(), FakeGoogle.empty(), FakeGoogle.prompt_blocked()]
)
def test_blocked_answers(fake_google: FakeGoogle, ctx: CallContext, behaviour: Any):
    fake_google.default = behaviour

    with pytest.raises(Blocked):
        llm_generate(ask(), context=ctx, retry=FAST)
    with pytest.raises(Blocked):
        list(llm_stream(ask(), context=ctx, retry=FAST))

    assert len(fake_google.generate_requests) == 2  # never retried
    assert [log.success for log in rows(ctx.tenant)] == [False, False]


def test_thoughts_ignored_max_tokens_and_missing_usage(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(
        fake_google.reply(
            "respuesta", thought="pensando...", input_tokens=None, output_tokens=None
        ),
        fake_google.reply("cort", finish="MAX_TOKENS"),
    )

    first = llm_generate(ask(), context=ctx, retry=FAST)
    second = llm_generate(ask(), context=ctx, retry=FAST)

    assert (first.text, first.input_tokens, first.output_tokens) == ("respuesta", 0, 0)
    assert (second.text, second.finish_reason) == ("cort", "max_tokens")


# --- streaming ----------------------------------------------------------------------------


def test_stream_yields_answer_before_the_last_chunk(fake_google: FakeGoogle, ctx: CallContext):
    answer = 'Sí: abrimos el sábado de 9 a 17 h.\n"Pan" recién hecho 🥖'
    fake_google.push(
        fake_google.reply_json(
            {"action": "respond", "answer": answer, "confidence": 0.9},
            chunks=8,
            chunk_delay=0.08,
            input_tokens=40,
            output_tokens=20,
        )
    )
    schema = build_action_schema(ACTIONS, COMMON)

    first_delta_at = None
    deltas: list[str] = []
    final = None
    for event in answer_deltas(llm_stream(ask(json_schema=schema), context=ctx, retry=FAST)):
        if isinstance(event, TextDelta):
            first_delta_at = first_delta_at or time.monotonic()
            deltas.append(event.text)
        else:
            final = event

    assert first_delta_at is not None and first_delta_at < fake_google.stream_sent_at[-1]
    assert len(deltas) > 1
    assert "".join(deltas) == answer
    assert isinstance(final, LlmResult)
    assert final.parsed is not None
    assert final.parsed["answer"] == answer
    assert (final.input_tokens, final.output_tokens) == (40, 20)
    assert fake_google.requests[0].query == {"alt": ["sse"]}
    assert [log.success for log in rows(ctx.tenant)] == [True]


def test_stream_retries_before_the_first_delta(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.unavailable(), fake_google.reply("hola"))

    events = list(llm_stream(ask(), context=ctx, retry=FAST))

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hola"
    assert [log.success for log in rows(ctx.tenant)] == [False, True]


def test_a_stream_that_keeps_dripping_is_stopped_at_the_attempt_timeout(
    fake_google: FakeGoogle, ctx: CallContext
):
    """Each chunk comes before the read timeout, the whole answer would take 7 s: it ends
    with a Timeout at the attempt's 1.5 s (after text was shown: not retried)."""
    text = "uno dos tres cuatro cinco seis siete ocho"
    fake_google.push(fake_google.reply(text, chunks=8, chunk_delay=1.0))

    deltas: list[str] = []
    started = time.monotonic()
    with pytest.raises(Timeout):
        for event in llm_stream(ask(), context=ctx, retry=RetryPolicy(timeout_s=1.5, attempts=3)):
            deltas.append(event.text)

    assert 1.5 <= time.monotonic() - started < 5
    assert 0 < len(deltas) < 8
    assert len(fake_google.generate_requests) == 1
    logs = rows(ctx.tenant)
    assert len(logs) == 1 and not logs[0].success
    assert logs[0].error_message.startswith("Timeout")


def test_abandoned_stream_is_still_recorded(fake_google: FakeGoogle, ctx: CallContext):
    fake_google.push(fake_google.reply("uno dos tres", chunks=3))

    stream = llm_stream(ask(), context=ctx, retry=FAST)
    assert isinstance(next(stream), TextDelta)
    stream.close()  # type: ignore[attr-defined]  # llm_stream is a generator, annotated as an Iterator

    logs = rows(ctx.tenant)
    assert len(logs) == 1 and not logs[0].success
    assert logs[0].error_message.startswith("StreamAbandoned")
