"""The offline provider: answers without any language model.

Used when no model is configured, and by the demo. It follows the same JSON action
protocol as a real model, but it does not understand the question: it quotes the most
relevant passage the caller retrieved (the first; passages come best first; the caller
passes only passages retrieval is confident about: ai_agents/knowledge/confidence.py), or
says it does not have that information and offers a person (`NO_INFORMATION`, and
`no_answer: true` in the action JSON when the schema has the field). It writes in the
customer's language (guessed from their messages, `erp.llm.language`), frames the quote
("Esto es lo que encontré:"), keeps the passage's line breaks and lists and never names the
file it comes from. Every answer carries `OFFLINE_LABEL` so users and operators can tell it
apart from a model's answer.

Token counts are zero: no model ran, nothing is billed, and the usage ledger and
`/api/v1/usage` report real model consumption only (an estimate would look like one).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

from django.utils.translation import get_language, gettext_noop, override
from django.utils.translation import gettext as _

from erp.llm.errors import Unsupported
from erp.llm.language import customer_language
from erp.llm.types import LlmRequest, LlmResult, MediaRequest, Passage, TextDelta

PROVIDER_NAME = "offline"
MODEL_NAME = "offline"
# A plain string (not lazy) so callers can test `OFFLINE_LABEL in text`; shown via gettext.
OFFLINE_LABEL = gettext_noop("(sin modelo de lenguaje)")
# The refusal (Spanish source; English in locale/): other modules recognise it by these words.
NO_INFORMATION = gettext_noop(
    "No tengo esa información; ¿quiere que le pase con una persona del equipo?"
)
FOUND_INTRO = gettext_noop("Esto es lo que encontré:")
NO_ANSWER_FIELD = "no_answer"  # the action JSON's flag: the passages did not answer
QUOTE_MAX_CHARS = 600
ANSWER_ACTIONS = ("respond", "responder", "answer")
_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")
_HEADING = re.compile(r"^#{1,6}\s+")


class OfflineProvider:
    name = PROVIDER_NAME
    default_model = MODEL_NAME

    @classmethod
    def from_settings(cls) -> OfflineProvider:
        return cls()  # always configured

    def generate(self, request: LlmRequest) -> LlmResult:
        started = time.monotonic()
        users = [m.content for m in reversed(request.messages) if m.role == "user"]
        language = customer_language(users, default=(get_language() or "es")[:2])
        answer = offline_answer(request.passages, language=language)
        text, parsed = _shape(answer, request.json_schema, no_answer=not request.passages)
        return LlmResult(
            text=text,
            parsed=parsed,
            finish_reason="stop",
            input_tokens=0,
            output_tokens=0,
            latency_ms=int((time.monotonic() - started) * 1000),
            provider=self.name,
            model=MODEL_NAME,
            metadata={"offline": True, "quoted": bool(request.passages), "language": language},
        )

    def media_model(self, request: MediaRequest) -> str:
        return MODEL_NAME

    def media_text(self, request: MediaRequest) -> LlmResult:
        """No model hears audio or sees images here: the caller asks the customer to write."""
        raise Unsupported("sin modelo no se puede leer audio ni imagen", provider=self.name)

    def stream(self, request: LlmRequest) -> Iterator[TextDelta | LlmResult]:
        result = self.generate(request)
        for piece in _split(result.text, parts=3):
            yield TextDelta(piece)
        yield result


def offline_answer(passages: Sequence[Passage], *, language: str = "es") -> str:
    """The best passage framed in `language`, or the no-information offer of a person."""
    with override(language):
        label = _(OFFLINE_LABEL)
        if passages:
            return f"{_(FOUND_INTRO)}\n\n{trim_quote(passages[0].text)}\n\n{label}"
        return f"{_(NO_INFORMATION)}\n{label}"


def trim_quote(text: str, limit: int = QUOTE_MAX_CHARS) -> str:
    """The passage as written: its lines (lists stay lists; spaces inside a line collapsed,
    Markdown heading marks and runs of blank lines dropped), cut within `limit` at the last
    line end, else the last sentence end, else a word (+ …)."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = _HEADING.sub("", " ".join(raw.split()))
        if line or (lines and lines[-1]):
            lines.append(line)
    text = "\n".join(lines).strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    line_end = head.rfind("\n")
    if line_end >= limit // 3:
        return head[:line_end].rstrip()
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit // 3:
        return head[: ends[-1]]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(",;: ") + "…"


def _shape(
    answer: str, schema: dict[str, Any] | None, *, no_answer: bool
) -> tuple[str, Any | None]:
    """The answer as the action protocol's JSON when the schema asks for it (`no_answer`
    set when the schema has the field)."""
    properties = (schema or {}).get("properties") or {}
    action_schema = properties.get("action") or {}
    enum = action_schema.get("enum") or []
    if not enum or "answer" not in properties:
        return answer, None
    action = next((a for a in ANSWER_ACTIONS if a in enum), enum[0])
    payload: dict[str, Any] = {"action": action, "answer": answer}
    if NO_ANSWER_FIELD in properties:
        payload[NO_ANSWER_FIELD] = no_answer
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
