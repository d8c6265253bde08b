"""The offline provider: answers without any language model.

Used when no model is configured, and by the demo. It follows the same JSON action
protocol as a real model, but it does not understand the question: it quotes the most
relevant passage the caller retrieved (the first; passages come best first) with its
source, or says it does not know and offers a person. Every answer carries
`OFFLINE_LABEL` so users and operators can tell it apart from a model's answer.

Token counts are zero: no model ran, nothing is billed, and the usage ledger and
`/api/v1/usage` report real model consumption only (an estimate would look like one).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from erp.llm.types import LlmRequest, LlmResult, Passage, TextDelta

PROVIDER_NAME = "offline"
MODEL_NAME = "offline"
# A plain string (not lazy) so callers can test `OFFLINE_LABEL in text`; shown via gettext.
OFFLINE_LABEL = gettext_noop("(sin modelo de lenguaje)")
QUOTE_MAX_CHARS = 400
ANSWER_ACTIONS = ("respond", "responder", "answer")
_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")


class OfflineProvider:
    name = PROVIDER_NAME
    default_model = MODEL_NAME

    @classmethod
    def from_settings(cls) -> OfflineProvider:
        return cls()  # always configured

    def generate(self, request: LlmRequest) -> LlmResult:
        started = time.monotonic()
        answer = offline_answer(request.passages)
        text, parsed = _shape(answer, request.json_schema)
        return LlmResult(
            text=text,
            parsed=parsed,
            finish_reason="stop",
            input_tokens=0,
            output_tokens=0,
            latency_ms=int((time.monotonic() - started) * 1000),
            provider=self.name,
            model=MODEL_NAME,
            metadata={"offline": True, "quoted": bool(request.passages)},
        )

    def stream(self, request: LlmRequest) -> Iterator[TextDelta | LlmResult]:
        result = self.generate(request)
        for piece in _split(result.text, parts=3):
            yield TextDelta(piece)
        yield result


def offline_answer(passages: Sequence[Passage]) -> str:
    label = _(OFFLINE_LABEL)
    if passages:
        best = passages[0]
        return _("Esto dice nuestra documentación (%(source)s):\n«%(quote)s»\n%(label)s") % {
            "source": best.source,
            "quote": trim_quote(best.text),
            "label": label,
        }
    return (
        _(
            "No tengo información para responder a eso. "
            "¿Quiere que pase la conversación a una persona?"
        )
        + " "
        + label
    )


def trim_quote(text: str, limit: int = QUOTE_MAX_CHARS) -> str:
    """Whitespace collapsed; cut at the last sentence end within `limit` (else a word, + …)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit // 3:
        return head[: ends[-1]]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(",;: ") + "…"


def _shape(answer: str, schema: dict[str, Any] | None) -> tuple[str, Any | None]:
    """The answer as the action protocol's JSON when the schema asks for it."""
    properties = (schema or {}).get("properties") or {}
    action_schema = properties.get("action") or {}
    enum = action_schema.get("enum") or []
    if not enum or "answer" not in properties:
        return answer, None
    action = next((a for a in ANSWER_ACTIONS if a in enum), enum[0])
    payload: dict[str, Any] = {"action": action, "answer": answer}
    for name in (schema or {}).get("required") or []:
        if name not in payload:
            payload[name] = _empty_value(properties.get(name) or {})
    return json.dumps(payload, ensure_ascii=False), payload


def _empty_value(schema: dict[str, Any]) -> Any:
    """A schema-valid neutral value for a required field the offline answer has no use for."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), None)
    return {
        "string": "",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "array": [],
        "object": {},
    }.get(str(kind).lower())


def _split(text: str, *, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
