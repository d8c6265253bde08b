"""The offline provider: quotes the best passage or offers a person, always labelled."""

from __future__ import annotations

import json
from typing import Any

from erp.llm.providers.offline import OFFLINE_LABEL, OfflineProvider, trim_quote
from erp.llm.types import LlmRequest, LlmResult, Message, Passage, TextDelta

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["search_knowledge", "respond", "escalate"]},
        "answer": {"type": "string"},
        "confidence": {"type": "number"},
        "escalate": {"type": "boolean"},
    },
    "required": ["action", "answer", "confidence", "escalate"],
}
PASSAGES = [
    Passage(
        text="Abrimos de lunes a viernes de 9 a 18 h. Los sábados, de 9 a 14 h.",
        source="Horarios.pdf",
    ),
    Passage(text="Los envíos tardan 3 días.", source="Envíos.md"),
]


def ask(**kw: Any) -> LlmRequest:
    return LlmRequest(messages=[Message("user", "¿Abren el sábado?")], **kw)


def test_quotes_the_best_passage_with_its_source_as_a_respond_action() -> None:
    result = OfflineProvider.from_settings().generate(ask(json_schema=SCHEMA, passages=PASSAGES))

    assert result.parsed is not None
    answer = result.parsed["answer"]
    assert result.parsed == {
        "action": "respond",
        "answer": answer,
        "confidence": 0,
        "escalate": False,
    }
    assert json.loads(result.text) == result.parsed
    assert "Horarios.pdf" in answer
    assert "«Abrimos de lunes a viernes de 9 a 18 h. Los sábados, de 9 a 14 h.»" in answer
    assert "Envíos" not in answer
    assert answer.startswith("Esto dice nuestra documentación")
    assert OFFLINE_LABEL in answer
    assert (result.provider, result.model, result.input_tokens, result.output_tokens) == (
        "offline",
        "offline",
        0,
        0,
    )


def test_without_passages_says_it_does_not_know_and_offers_a_person() -> None:
    result = OfflineProvider().generate(ask(json_schema=SCHEMA))
    assert result.parsed is not None
    answer = result.parsed["answer"]
    assert answer == (
        "No tengo información para responder a eso. "
        "¿Quiere que pase la conversación a una persona? (sin modelo de lenguaje)"
    )


def test_action_falls_back_to_the_first_enum_value_and_uppercase_types() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "action": {"type": "STRING", "enum": ["reply_draft", "ask_user"]},
            "answer": {"type": "STRING"},
        },
    }
    spanish = {
        "properties": {"action": {"enum": ["buscar", "responder"]}, "answer": {}},
    }
    english = OfflineProvider().generate(ask(json_schema=schema)).parsed
    translated = OfflineProvider().generate(ask(json_schema=spanish)).parsed
    assert english is not None and english["action"] == "reply_draft"
    assert translated is not None and translated["action"] == "responder"


def test_without_an_action_schema_answers_plain_text() -> None:
    result = OfflineProvider().generate(ask(passages=PASSAGES))
    assert result.parsed is None
    assert result.text.endswith(OFFLINE_LABEL)
    assert "Horarios.pdf" in result.text


def test_stream_yields_the_same_text_in_pieces_then_the_result() -> None:
    items = list(OfflineProvider().stream(ask(json_schema=SCHEMA, passages=PASSAGES)))
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    result = items[-1]
    assert isinstance(result, LlmResult)
    assert len(deltas) >= 2
    assert "".join(deltas) == result.text


def test_long_passages_are_cut_at_a_sentence_end() -> None:
    sentence = "Esta es una frase de prueba con varias palabras. "
    text = sentence * 20  # 1000 characters
    quote = trim_quote(text)
    assert len(quote) <= 400
    assert quote.endswith("palabras.")
    assert text.startswith(quote)


def test_a_long_passage_without_sentences_is_cut_at_a_word_with_ellipsis() -> None:
    quote = trim_quote("palabra " * 100)
    assert quote.endswith("palabra…")
    assert len(quote) <= 401
