# ruff: noqa: F811  (pytest fixtures imported from correo.tests.fakes)
"""POST /api/correo/ask refuses bad input with a 400 naming the field, and cleans what it keeps:
question length, unstorable characters, the history (last 12 valid messages, cut)."""

from __future__ import annotations

from typing import Any

import pytest

from correo.models import ChatQuery
from correo.tests.ask_kit import (
    URL,
    fast_retries,  # noqa: F401 (autouse fixture)
    post,
    prompt_of,
)
from correo.tests.fakes import FakeMailbox, clean_cache, fake_mailbox  # noqa: F401
from erp.testing.fake_google import FakeGoogle
from erp.testing.fixtures import Persona


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "question"),
        ({"question": None}, "question"),
        ({"question": 42}, "question"),
        ({"question": ""}, "question"),
        ({"question": "   \n\t "}, "question"),
        ({"question": "x" * 2001}, "question"),
        ({"question": "hola", "history": "no es una lista"}, "history"),
        ({"question": "hola", "history": {"role": "user"}}, "history"),
    ],
)
def test_invalid_input_is_400_naming_the_field(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox, body: Any, field: str
):
    response = post(owner_client, body)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert response.json()["error"]["field"] == field
    assert fake_google.generate_requests == []


@pytest.mark.parametrize(
    ("raw", "code"),
    [("[]", "validation_error"), ("no json", "parse_error"), ('"texto"', "validation_error")],
)
def test_a_body_that_is_not_an_object_is_400(
    owner_client: Any, fake_mailbox: FakeMailbox, raw: str, code: str
):
    response = owner_client.post(URL, data=raw, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert ChatQuery.objects.unscoped().count() == 0
    assert fake_mailbox.calls == []


@pytest.mark.parametrize(
    ("language", "message"),
    [
        (None, "El cuerpo de la solicitud no es JSON válido."),
        ("en", "The request body is not valid JSON."),
    ],
)
def test_a_body_that_is_not_json_is_a_clear_400_spanish_first(
    owner_client: Any, fake_google: FakeGoogle, language: str | None, message: str
):
    headers = {"HTTP_ACCEPT_LANGUAGE": language} if language else {}
    response = owner_client.post(
        URL, data="{pregunta: hola", content_type="application/json", **headers
    )

    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"error": {"code": "parse_error", "message": message}}
    assert fake_google.generate_requests == []


def test_question_of_2000_characters_is_accepted_and_500_are_stored(
    owner_client: Any, owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    question = "¿" + "a" * 1998 + "?"
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "Vale."}))

    assert post(owner_client, {"question": "  " + question + "  "}).status_code == 200

    stored = ChatQuery.objects.for_tenant(owner.tenant).get().question
    assert stored == question[:500]


def test_unstorable_characters_in_the_question_and_history_are_replaced(
    owner_client: Any, owner: Persona, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "Vale."}))
    body = (
        '{"question": "¿Ho\\u0000la \\ud800?",'
        ' "history": [{"role": "user", "content": "an\\udc00tes"}]}'
    )

    response = owner_client.post(URL, body, content_type="application/json")

    assert response.status_code == 200, response.content
    assert response.json()["answer"] == "Vale."
    prompt = prompt_of(fake_google.generate_requests[0])
    assert "¿Ho\ufffdla \ufffd?" in prompt and "an\ufffdtes" in prompt
    stored = ChatQuery.objects.for_tenant(owner.tenant).get().question
    assert stored == "¿Ho\ufffdla \ufffd?"


def test_history_is_filtered_to_the_last_12_valid_messages(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    history: list[Any] = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"mensaje-{i:02d}"}
        for i in range(16)
    ]
    history[14:14] = [
        {"role": "system", "content": "ROL-INVALIDO"},
        {"role": "user", "content": "   "},
        {"role": "assistant"},
        {"role": "user", "content": 7},
        "texto suelto",
        None,
    ]
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "Vale."}))

    response = post(owner_client, {"question": "¿Y ahora?", "history": history})

    assert response.status_code == 200
    prompt = prompt_of(fake_google.generate_requests[0])
    kept = [f"mensaje-{i:02d}" for i in range(4, 16)]
    assert all(m in prompt for m in kept)
    assert "mensaje-03" not in prompt and "ROL-INVALIDO" not in prompt
    assert prompt.index("mensaje-04") < prompt.index("mensaje-15")
    assert "Usuario: mensaje-04" in prompt and "Secretaria: mensaje-05" in prompt


def test_long_history_messages_are_cut(
    owner_client: Any, fake_google: FakeGoogle, fake_mailbox: FakeMailbox
):
    history = [{"role": "assistant", "content": "a" * 4000 + "CORTADO"}]
    fake_google.push(fake_google.reply_json({"action": "responder", "answer": "Vale."}))

    assert post(owner_client, {"question": "¿Y?", "history": history}).status_code == 200
    prompt = prompt_of(fake_google.generate_requests[0])
    assert "a" * 4000 in prompt and "CORTADO" not in prompt


def test_get_is_405(owner_client: Any):
    response = owner_client.get(URL)

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
