"""What Gemini is sent: the response schema, the turns and the generation config of a request.

Gemini wants alternating user/model turns and an OpenAPI-style schema; our `LlmRequest` has
free roles and JSON Schema. Tool results go as user turns with a readable prefix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from google.genai import types

from erp.llm.types import LlmRequest, MediaRequest, Message

TOOL_PREFIX = "Resultado de la herramienta"
_NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)

_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "propertyOrdering",
        "items",
        "anyOf",
        "minimum",
        "maximum",
        "title",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "default",
    }
)


def to_gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI-style `responseSchema` (uppercase types, property order kept) from either
    that form or a lowercase JSON Schema. Unsupported keywords are dropped."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "type":
            types_ = value if isinstance(value, list) else [value]
            non_null = [t for t in types_ if str(t).lower() != "null"]
            if len(non_null) < len(types_):
                out["nullable"] = True
            if non_null:
                out["type"] = str(non_null[0]).upper()
        elif key == "properties":
            out["properties"] = {name: to_gemini_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out["items"] = to_gemini_schema(value)
        elif key == "anyOf":
            out["anyOf"] = [to_gemini_schema(sub) for sub in value]
        else:
            out[key] = value
    if "properties" in out and "propertyOrdering" not in out:
        out["propertyOrdering"] = list(out["properties"])
    return out


def gemini_contents(messages: Sequence[Message], fold_system: str) -> list[types.Content]:
    """Gemini turns; consecutive turns of one role are merged (roles must alternate)."""
    turns: list[tuple[str, list[str]]] = []
    for message in messages:
        if message.role == "assistant":
            role, text = "model", message.content
        elif message.role == "tool":
            name = f" {message.name}" if message.name else ""
            role, text = "user", f"[{TOOL_PREFIX}{name}]\n{message.content}"
        else:
            role, text = "user", message.content
        if turns and turns[-1][0] == role:
            turns[-1][1].append(text)
        else:
            turns.append((role, [text]))
    if fold_system:
        if turns and turns[0][0] == "user":
            turns[0][1].insert(0, fold_system)
        else:
            turns.insert(0, ("user", [fold_system]))
    return [
        types.Content(role=role, parts=[types.Part(text="\n\n".join(texts))])
        for role, texts in turns
    ]


def gemini_config(request: LlmRequest, *, with_system: bool) -> types.GenerateContentConfig:
    config: dict[str, Any] = {
        "http_options": types.HttpOptions(timeout=max(1, math.ceil(request.timeout_s * 1000))),
        "automatic_function_calling": _NO_AFC,
    }
    if request.system and with_system:
        config["system_instruction"] = request.system
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.top_k is not None:
        config["top_k"] = request.top_k
    if request.max_output_tokens is not None:
        config["max_output_tokens"] = request.max_output_tokens
    if request.json_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_schema"] = to_gemini_schema(request.json_schema)
    return types.GenerateContentConfig(**config)


def gemini_media_contents(request: MediaRequest) -> list[types.Content]:
    """One user turn: the audio or image inline (base64 on the wire, under 20 MB) and the
    instruction beside it."""
    return [
        types.Content(
            role="user",
            parts=[
                types.Part.from_bytes(data=request.data, mime_type=request.mime_type),
                types.Part.from_text(text=request.prompt),
            ],
        )
    ]


def gemini_media_config(request: MediaRequest) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        automatic_function_calling=_NO_AFC,
        http_options=types.HttpOptions(timeout=max(1, math.ceil(request.timeout_s * 1000))),
    )
