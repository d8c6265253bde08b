"""The action protocol: schema building, parsing, and incremental answer extraction."""

from __future__ import annotations

import json
import logging

import pytest

from erp.llm.actions import ActionSpec, AnswerStreamExtractor, build_action_schema, parse_action
from erp.llm.providers.google_request import to_gemini_schema

CORREO = [
    ActionSpec("responder", "contestar"),
    ActionSpec(
        "buscar",
        "buscar en el buzón",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "from": {"type": "string"},
                "subject": {"type": "string"},
            },
        },
    ),
    ActionSpec(
        "leer",
        "leer un mensaje",
        {
            "type": "object",
            "properties": {"messageId": {"type": "string"}, "folderId": {"type": "string"}},
            "required": ["messageId", "folderId"],
        },
    ),
]


def test_correo_schema_matches_the_spec():
    schema = build_action_schema(CORREO, {"answer": {"type": "string"}})

    assert list(schema["properties"]) == [
        "action",
        "answer",
        "query",
        "from",
        "subject",
        "messageId",
        "folderId",
    ]
    assert schema["properties"]["action"]["enum"] == ["responder", "buscar", "leer"]
    assert schema["required"] == ["action"]
    gemini = to_gemini_schema(schema)
    assert gemini["type"] == "OBJECT"
    assert gemini["properties"]["action"]["type"] == "STRING"
    assert gemini["propertyOrdering"][0] == "action"


def test_conflicting_argument_schemas_are_refused():
    clash = ActionSpec("x", args_schema={"properties": {"query": {"type": "integer"}}})
    with pytest.raises(ValueError):
        build_action_schema([*CORREO, clash])


def test_json_schema_is_converted_to_gemini_form():
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            "note": {"type": ["string", "null"]},
            "score": {"type": "number", "minimum": 0},
        },
    }

    assert to_gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": 5},
            "note": {"type": "STRING", "nullable": True},
            "score": {"type": "NUMBER", "minimum": 0},
        },
        "propertyOrdering": ["tags", "note", "score"],
    }


def test_parse_valid_action():
    parsed = parse_action(
        '{"action": "leer", "messageId": "m1", "folderId": "f1", "answer": null, "query": null}',
        CORREO,
        answer_action="responder",
    )
    assert (parsed.name, parsed.args, parsed.broken) == (
        "leer",
        {"messageId": "m1", "folderId": "f1"},
        False,
    )


def test_parse_answer_with_common_fields():
    parsed = parse_action(
        {"action": "responder", "answer": "Hola", "intent": "faq", "confidence": 0.8},
        CORREO,
        answer_action="responder",
        common_fields=["intent", "confidence"],
    )
    assert parsed.answer == "Hola"
    assert parsed.fields == {"answer": "Hola", "intent": "faq", "confidence": 0.8}


@pytest.mark.parametrize(
    ("output", "answer"),
    [
        ("Lo siento, no tengo ese dato.", "Lo siento, no tengo ese dato."),
        ('{"action": "responder", "answer": "Tu servidor se reinic', "Tu servidor se reinic"),
        ('{"action": "volar", "answer": "Claro"}', "Claro"),
        ("[1, 2]", "[1, 2]"),
        ("", ""),
    ],
)
def test_broken_output_is_a_logged_plain_answer(
    output: str, answer: str, caplog: pytest.LogCaptureFixture
):
    with caplog.at_level(logging.WARNING, logger="erp.llm.actions"):
        parsed = parse_action(output, CORREO, answer_action="responder")

    assert (parsed.name, parsed.broken, parsed.answer) == ("responder", True, answer)
    assert parsed.raw == output
    assert [r.getMessage() for r in caplog.records] == ["llm.action.broken"]


ANSWER = 'Línea 1\nDijo "hola" \\ fin\t😀 €'
DOCUMENT = json.dumps(
    {
        "action": "respond",
        "meta": {"answer": "no, esto está anidado", "list": ["answer", "}"]},
        "note": 'un "answer": "falso"',
        "answer": ANSWER,
        "confidence": 0.5,
    }
)


@pytest.mark.parametrize("ascii_escapes", [True, False])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_extractor_decodes_the_top_level_answer_across_chunks(size: int, ascii_escapes: bool):
    text = json.dumps(json.loads(DOCUMENT), ensure_ascii=ascii_escapes)
    extractor = AnswerStreamExtractor()

    pieces = [extractor.feed(text[i : i + size]) for i in range(0, len(text), size)]

    assert "".join(pieces) == ANSWER
    assert extractor.done
    if size == 1:
        assert sum(1 for p in pieces if p) > 5  # character by character, not at the end


def test_extractor_yields_before_the_object_closes():
    extractor = AnswerStreamExtractor()
    assert extractor.feed('{"action": "respond", "answer": "Abri') == "Abri"
    assert extractor.feed("mos a las 9") == "mos a las 9"
    assert not extractor.done


def test_extractor_passes_plain_text_through():
    extractor = AnswerStreamExtractor()
    assert extractor.feed("  Hola, ") + extractor.feed("¿qué tal?") == "Hola, ¿qué tal?"
    assert extractor.plain_text


def test_extractor_custom_field_and_missing_answer():
    extractor = AnswerStreamExtractor("reply")
    assert extractor.feed('{"answer": "x", "reply": "y"}') == "y"
    none = AnswerStreamExtractor()
    assert none.feed('{"action": "buscar", "query": "pan"}') == ""
    assert not none.done
