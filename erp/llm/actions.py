"""The action protocol: the model answers one JSON object whose `action` names what to do.

`build_action_schema` gives the schema for constrained decoding: `action` first (an enum of
the allowed names), then the common fields (answer, intent, confidence...), then every
action's arguments, all in one flat object (the shape correo's secretary uses too).
`parse_action` turns the model's output into a `ParsedAction`; output that is broken despite
constrained decoding, or names an unknown action, becomes a plain answer with `broken=True`
(and a warning is logged).
`AnswerStreamExtractor` yields the characters of the `answer` string as they stream in.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from erp.llm.types import LlmResult, TextDelta

logger = logging.getLogger(__name__)

ANSWER_FIELD = "answer"


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str = ""
    # A JSON Schema object ({"type": "object", "properties": {...}, "required": [...]}).
    args_schema: Mapping[str, Any] = field(default_factory=dict)

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(self.args_schema.get("properties", {}))


@dataclass(frozen=True)
class ParsedAction:
    name: str
    args: dict[str, Any]
    fields: dict[str, Any]  # the common fields present (answer, intent, confidence...)
    broken: bool = False  # the output was not a valid action: `answer` holds the raw text
    raw: str = ""

    @property
    def answer(self) -> str:
        value = self.fields.get(ANSWER_FIELD, self.args.get(ANSWER_FIELD))
        return value if isinstance(value, str) else ""


# --- schema -------------------------------------------------------------------------------


def build_action_schema(
    actions: Sequence[ActionSpec],
    common_fields: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    required: Sequence[str] = (),
) -> dict[str, Any]:
    """A flat JSON Schema: `action` first, then the common fields, then the actions' args.

    Only `action` (plus `required`) is required: which args apply depends on the action. Two
    actions may share an argument name only with the same schema.
    """
    if not actions:
        raise ValueError("at least one action is needed")
    described = "; ".join(f"{a.name}: {a.description}" for a in actions if a.description)
    action_prop: dict[str, Any] = {"type": "string", "enum": [a.name for a in actions]}
    if described:
        action_prop["description"] = described
    properties: dict[str, Any] = {"action": action_prop}
    for name, schema in (common_fields or {}).items():
        properties[name] = dict(schema)
    for action in actions:
        for name, schema in action.args_schema.get("properties", {}).items():
            if name == "action":
                raise ValueError(f"action {action.name!r} has an argument named 'action'")
            if name in properties and properties[name] != dict(schema):
                raise ValueError(f"argument {name!r} has two different schemas")
            properties[name] = dict(schema)
    return {"type": "object", "properties": properties, "required": ["action", *required]}


# --- parsing ------------------------------------------------------------------------------


def parse_action(
    output: str | Mapping[str, Any] | None,
    actions: Sequence[ActionSpec],
    *,
    answer_action: str = "respond",
    common_fields: Iterable[str] = (ANSWER_FIELD,),
) -> ParsedAction:
    """The action the model chose. `output` is the model's text or its already parsed JSON."""
    by_name = {a.name: a for a in actions}
    common = set(common_fields) | {ANSWER_FIELD}
    raw = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    if isinstance(output, Mapping):
        data: Any = output
    else:
        try:
            data = json.loads(output or "")
        except ValueError:
            return _plain_answer(raw, answer_action, reason="invalid_json")
    if not isinstance(data, Mapping):
        return _plain_answer(raw, answer_action, reason="not_an_object")
    spec = by_name.get(str(data.get("action")))
    if spec is None:
        answer = data.get(ANSWER_FIELD)
        text = answer if isinstance(answer, str) and answer else raw
        return _plain_answer(text, answer_action, reason="unknown_action", raw=raw)
    args = {k: data[k] for k in spec.arg_names if k in data and data[k] is not None}
    fields = {k: v for k, v in data.items() if k in common and k not in args}
    return ParsedAction(name=spec.name, args=args, fields=fields, raw=raw)


def _plain_answer(text: str, answer_action: str, *, reason: str, raw: str = "") -> ParsedAction:
    logger.warning("llm.action.broken", extra={"reason": reason})
    raw = raw or text
    if reason == "invalid_json":
        # Truncated JSON still holds the beginning of the answer: show that, not braces.
        extractor = AnswerStreamExtractor()
        extracted = extractor.feed(text)
        if extracted.strip() and not extractor.plain_text:
            text = extracted
    return ParsedAction(
        name=answer_action, args={}, fields={ANSWER_FIELD: text.strip()}, broken=True, raw=raw
    )


# --- streaming ----------------------------------------------------------------------------

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r"}
_SIMPLE_ESCAPES["t"] = "\t"


class AnswerStreamExtractor:
    """Feed chunks of a JSON object as they stream; get the decoded characters of its
    top-level `field` string as soon as they arrive (escapes may be split across chunks).

    Output that does not start with `{` is plain text (a model ignoring the schema): it is
    passed through as is.
    """

    def __init__(self, field: str = ANSWER_FIELD) -> None:
        self.field = field
        self.text = ""  # everything yielded so far
        self.done = False  # the answer string has closed
        self.plain_text = False
        self._started = False
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._string_is_key = False
        self._key: list[str] = []
        self._expect_key = False
        self._last_key: str | None = None
        self._after_colon = False
        self._capturing = False
        self._unicode: str | None = None  # hex digits of a \\u escape being read
        self._high_surrogate: int | None = None

    def feed(self, chunk: str) -> str:
        out: list[str] = []
        for ch in chunk:
            if not self._started:
                if ch.isspace():
                    continue
                self._started = True
                self.plain_text = ch != "{"
            if self.plain_text:
                out.append(ch)
            elif self._capturing:
                self._capture(ch, out)
            elif not self.done:
                self._scan(ch)
        result = "".join(out)
        self.text += result
        return result

    def _scan(self, ch: str) -> None:
        if self._in_string:
            if self._escape:
                self._escape = False
                if self._string_is_key:
                    self._key.append(_SIMPLE_ESCAPES.get(ch, ch))
            elif ch == "\\":
                self._escape = True
            elif ch == '"':
                self._in_string = False
                if self._string_is_key:
                    self._last_key = "".join(self._key)
            elif self._string_is_key:
                self._key.append(ch)
            return
        if ch == '"':
            if self._depth == 1 and self._after_colon and self._last_key == self.field:
                self._after_colon = False
                self._capturing = True
                return
            self._in_string = True
            self._string_is_key = self._depth == 1 and self._expect_key
            self._key = []
            self._expect_key = False
            self._after_colon = False
        elif ch in "{[":
            self._depth += 1
            self._expect_key = self._depth == 1 and ch == "{"
            self._after_colon = False
        elif ch in "}]":
            self._depth -= 1
        elif ch == "," and self._depth == 1:
            self._expect_key = True
        elif ch == ":" and self._depth == 1:
            self._after_colon = True
        elif not ch.isspace():
            self._after_colon = False

    def _capture(self, ch: str, out: list[str]) -> None:
        if self._unicode is not None:
            self._unicode += ch
            if len(self._unicode) == 4:
                self._emit_code_point(int(self._unicode, 16), out)
                self._unicode = None
        elif self._escape:
            self._escape = False
            if ch == "u":
                self._unicode = ""
            else:
                self._flush_surrogate(out)
                out.append(_SIMPLE_ESCAPES.get(ch, ch))
        elif ch == "\\":
            self._escape = True
        elif ch == '"':
            self._flush_surrogate(out)
            self._capturing = False
            self.done = True
        else:
            self._flush_surrogate(out)
            out.append(ch)

    def _emit_code_point(self, code: int, out: list[str]) -> None:
        if 0xD800 <= code <= 0xDBFF:
            self._flush_surrogate(out)
            self._high_surrogate = code
            return
        if 0xDC00 <= code <= 0xDFFF and self._high_surrogate is not None:
            high, self._high_surrogate = self._high_surrogate, None
            out.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
            return
        self._flush_surrogate(out)
        out.append(chr(code))

    def _flush_surrogate(self, out: list[str]) -> None:
        if self._high_surrogate is not None:
            out.append("\ufffd")
            self._high_surrogate = None


def answer_deltas(
    events: Iterable[TextDelta | LlmResult], field: str = ANSWER_FIELD
) -> Iterator[TextDelta | LlmResult]:
    """A model stream turned into a stream of the answer's characters (the final result
    passes through unchanged)."""
    extractor = AnswerStreamExtractor(field)
    for event in events:
        if isinstance(event, TextDelta):
            text = extractor.feed(event.text)
            if text:
                yield TextDelta(text)
        else:
            yield event
