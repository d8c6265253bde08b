# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fakes)
"""POST /api/correo/ask: the configured provider's own model is asked, and one overall deadline
(`CORREO_ASK_DEADLINE_SECONDS`) bounds the whole question: the answer or a JSON error always
comes before it, tool rounds it leaves no room for are skipped."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from correo import secretary
from correo.digest import digest_build
from correo.tests import fake_zoho as fake_zoho_module
from correo.tests.ask_kit import post, prompt_of
from correo.tests.fakes import FakeMailbox, clean_cache, fake_mailbox, hetzner_items  # noqa: F401
from erp.llm.gateway import RetryPolicy
from erp.testing.fake_google import FakeGoogle
from erp.testing.fake_http import FakeResponse
from erp.testing.fake_openai import ChatReply, FakeOpenAI

DEADLINE_S = 2.0
# Attempts much longer than the deadline: only the deadline can cut them.
PATIENT = RetryPolicy(timeout_s=30, attempts=2, base_delay_s=0.01, deadline_s=60)


@pytest.fixture
def short_deadline(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.CORREO_ASK_DEADLINE_SECONDS = DEADLINE_S
    monkeypatch.setattr(secretary, "RETRY", PATIENT)


def timed_post(client: Any, body: Any) -> tuple[Any, float]:
    started = time.monotonic()
    response = post(client, body)
    return response, time.monotonic() - started


# --- the configured model -------------------------------------------------------------------


def test_an_openai_compatible_server_is_asked_for_its_configured_model(
    owner_client: Any, fake_openai: FakeOpenAI, fake_mailbox: FakeMailbox, settings: Any
):
    settings.GOOGLE_AI_API_KEY = None
    settings.OPENAI_DEFAULT_MODEL = "qwen3:8b"
    fake_mailbox.items = hetzner_items()
    fake_openai.script(
        ChatReply(json.dumps({"action": "buscar", "from": "alerts@hetzner.de"})),
        ChatReply(json.dumps({"action": "responder", "answer": "Tres avisos de Hetzner."})),
    )

    response = post(owner_client, {"question": "¿Qué dice Hetzner?"})

    assert response.status_code == 200, response.content
    assert response.json()["answer"] == "Tres avisos de Hetzner."
    assert [r["model"] for r in fake_openai.chat_requests] == ["qwen3:8b", "qwen3:8b"]
    assert response.json()["model"] == "qwen3:8b"


def test_without_openai_default_model_the_server_gets_llm_default_model(
    owner_client: Any, fake_openai: FakeOpenAI, fake_mailbox: FakeMailbox, settings: Any
):
    settings.GOOGLE_AI_API_KEY = None
    settings.OPENAI_DEFAULT_MODEL = None
    settings.LLM_DEFAULT_MODEL = "llama3.2:3b"
    fake_openai.script(ChatReply(json.dumps({"action": "responder", "answer": "Vale."})))

    assert post(owner_client, {"question": "¿Algo nuevo?"}).status_code == 200

    assert [r["model"] for r in fake_openai.chat_requests] == ["llama3.2:3b"]


def test_the_digest_also_asks_the_openai_compatible_servers_model(
    owner: Any, fake_openai: FakeOpenAI, fake_mailbox: FakeMailbox, settings: Any
):
    settings.GOOGLE_AI_API_KEY = None
    settings.OPENAI_DEFAULT_MODEL = "qwen3:8b"
    fake_mailbox.items = hetzner_items()
    items = [
        {"messageId": m.message_id, "categoria": "urgente", "motivo": "aviso"}
        for m in fake_mailbox.items
    ]
    fake_openai.script(ChatReply(json.dumps({"items": items})))

    digest = digest_build(user=owner.user, tenant=owner.tenant)

    assert digest.resumen == "3 correos urgentes, 0 normales"
    assert [r["model"] for r in fake_openai.chat_requests] == ["qwen3:8b"]


# --- the deadline ---------------------------------------------------------------------------


def test_a_model_that_hangs_ends_in_a_504_json_error_before_the_deadline(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox, short_deadline: None
):
    fake_google.push(fake_google.hang(10))

    response, elapsed = timed_post(owner_client, {"question": "¿Qué dice Hetzner?"})

    assert response.status_code == 504
    error = response.json()["error"]
    assert error["code"] == "deadline_exceeded"
    assert "tiempo máximo" in error["message"] and error["deadline_s"] == 2
    assert elapsed < DEADLINE_S + 1.0  # not the 30 s of an attempt, not two attempts
    assert fake_mailbox.calls == []


def test_the_504_speaks_english_to_an_english_speaking_member(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox, short_deadline: None
):
    fake_google.push(fake_google.hang(10))

    response = owner_client.post(
        "/api/correo/ask",
        data=json.dumps({"question": "What did Hetzner say?"}),
        content_type="application/json",
        HTTP_ACCEPT_LANGUAGE="en",
    )

    assert response.status_code == 504
    assert "maximum time" in response.json()["error"]["message"]


def test_a_slow_model_skips_the_tool_round_and_answers_with_what_it_has(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox, short_deadline: None
):
    fake_mailbox.items = hetzner_items()
    fake_google.push(
        fake_google.reply_json({"action": "buscar", "from": "alerts@hetzner.de"}, delay=0.8),
        fake_google.reply_json({"action": "responder", "answer": "Según el digest, nada."}),
    )

    response, elapsed = timed_post(owner_client, {"question": "¿Qué dice Hetzner?"})

    assert response.status_code == 200, response.content
    assert response.json() | {"duration_ms": 0} == {
        "answer": "Según el digest, nada.",
        "tool_rounds": 0,
        "duration_ms": 0,
        "model": "gemma-4-26b-a4b-it",
    }
    assert fake_mailbox.calls == []  # no time for the search and another call after it
    last = prompt_of(fake_google.generate_requests[-1])
    assert "Ya no quedan búsquedas ni lecturas" in last
    assert elapsed < DEADLINE_S


def test_a_fast_model_still_gets_its_tool_rounds_under_the_deadline(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox, short_deadline: None
):
    fake_mailbox.items = hetzner_items()
    fake_google.push(
        fake_google.reply_json({"action": "buscar", "from": "alerts@hetzner.de"}),
        fake_google.reply_json({"action": "responder", "answer": "Tres avisos."}),
    )

    response = post(owner_client, {"question": "¿Qué dice Hetzner?"})

    assert response.status_code == 200
    assert response.json()["tool_rounds"] == 1
    assert fake_mailbox.time_limits and 0 < fake_mailbox.time_limits[0] <= DEADLINE_S


def test_a_slow_mailbox_is_cut_at_the_deadline_and_the_answer_so_far_is_given(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox, short_deadline: None
):
    fake_mailbox.delay_s = 10
    so_far = "Aún no lo sé: estaba buscando en tu correo."
    fake_google.push(fake_google.reply_json({"action": "buscar", "query": "x", "answer": so_far}))

    response, elapsed = timed_post(owner_client, {"question": "¿Qué dice Hetzner?"})

    assert response.status_code == 200, response.content
    assert response.json()["answer"] == so_far
    assert elapsed < DEADLINE_S + 1.0


def test_a_slow_zoho_server_is_cut_at_the_deadline_with_a_504(
    request: pytest.FixtureRequest,
    owner_client: Any,
    fake_google: FakeGoogle,
    short_deadline: None,
):
    """The real Zoho client against the fake Zoho server: its own 15 s read limit is cut to
    the time left."""
    fake_zoho = request.getfixturevalue("fake_zoho")
    request.getfixturevalue("zoho_connection")
    slow = FakeResponse.json(fake_zoho_module.envelope([]), delay=10)
    fake_zoho.push_mail(slow, slow)
    fake_google.push(fake_google.reply_json({"action": "buscar", "query": "factura"}))

    response, elapsed = timed_post(owner_client, {"question": "¿Y la factura?"})

    assert response.status_code == 504
    assert response.json()["error"]["code"] == "deadline_exceeded"
    assert elapsed < DEADLINE_S + 1.5
