"""The offline provider: quotes the best passage or offers a person, in the customer's
language, never naming files, always labelled."""

from __future__ import annotations

import json
from typing import Any

from erp.llm.providers.offline import OFFLINE_LABEL, OfflineProvider, offline_answer, trim_quote
from erp.llm.types import LlmRequest, LlmResult, Message, Passage, TextDelta

SCHEMA: dict[str, Any] = {
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


def test_quotes_the_best_passage_framed_without_its_file_name_as_a_respond_action() -> None:
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
    assert answer == (
        "Esto es lo que encontré:\n\n"
        "Abrimos de lunes a viernes de 9 a 18 h. Los sábados, de 9 a 14 h.\n\n"
        "(sin modelo de lenguaje)"
    )
    assert "Horarios" not in answer and ".pdf" not in answer
    assert "Envíos" not in answer
    assert (result.provider, result.model, result.input_tokens, result.output_tokens) == (
        "offline",
        "offline",
        0,
        0,
    )


def test_without_passages_says_it_does_not_have_the_information_and_offers_a_person() -> None:
    result = OfflineProvider().generate(ask(json_schema=SCHEMA))
    assert result.parsed is not None
    assert result.parsed["answer"] == (
        "No tengo esa información; ¿quiere que le pase con una persona del equipo?\n"
        "(sin modelo de lenguaje)"
    )


def test_the_no_answer_flag_follows_the_refusal_when_the_schema_has_it() -> None:
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "no_answer": {"type": "boolean"}}}
    refused = OfflineProvider().generate(ask(json_schema=schema)).parsed
    quoted = OfflineProvider().generate(ask(json_schema=schema, passages=PASSAGES)).parsed
    assert refused is not None and refused["no_answer"] is True
    assert quoted is not None and quoted["no_answer"] is False


def test_an_english_customer_gets_english_framing_and_refusal() -> None:
    question = [Message("user", "Do you open on Saturdays?")]
    quoted = OfflineProvider().generate(LlmRequest(messages=question, passages=PASSAGES))
    refused = OfflineProvider().generate(LlmRequest(messages=question))
    assert quoted.text.startswith("Here is what I found:\n\nAbrimos de lunes a viernes")
    assert quoted.text.endswith("(no language model)")
    assert refused.text == (
        "I don't have that information; would you like me to put you through to a person "
        "on our team?\n(no language model)"
    )


def test_a_short_reply_keeps_the_language_of_the_customers_earlier_messages() -> None:
    messages = [
        Message("user", "Hi, what are your opening hours?"),
        Message("assistant", "…"),
        Message("user", "ok"),
    ]
    assert (
        OfflineProvider()
        .generate(LlmRequest(messages=messages))
        .text.startswith("I don't have that information")
    )


def test_line_breaks_and_lists_of_the_passage_are_kept() -> None:
    passage = Passage(
        text="## Formas de pago\n\n- Efectivo,   solo en pesos.\n- Tarjetas Visa y Mastercard."
        "\n\n\n\nTransferencia SPEI para anticipos.",
        source="pagos.md",
    )
    answer = offline_answer([passage], language="es")
    assert answer == (
        "Esto es lo que encontré:\n\n"
        "Formas de pago\n\n- Efectivo, solo en pesos.\n- Tarjetas Visa y Mastercard.\n\n"
        "Transferencia SPEI para anticipos.\n\n(sin modelo de lenguaje)"
    )
    assert "pagos.md" not in answer


def test_a_long_list_is_cut_at_a_line_end() -> None:
    text = "\n".join(f"- Producto número {i}: cuesta {i * 10} pesos." for i in range(40))
    quote = trim_quote(text)
    assert len(quote) <= 600
    assert quote.endswith("pesos.")
    assert text.startswith(quote)
    assert quote.count("\n") >= 10


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
    assert "Abrimos de lunes a viernes" in result.text
    assert "Horarios.pdf" not in result.text


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
    assert len(quote) <= 600
    assert quote.endswith("palabras.")
    assert text.startswith(quote)


def test_a_long_passage_without_sentences_is_cut_at_a_word_with_ellipsis() -> None:
    quote = trim_quote("palabra " * 100)
    assert quote.endswith("palabra…")
    assert len(quote) <= 601
