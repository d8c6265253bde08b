"""Tool registry and a small JSON-schema argument validator.

`ToolSpec(name, description, args_schema)` describes a tool to the model; `ToolResult` is what a
run returns (`content` is the text for the model, already truncated; `data` the structured value
when there is one). `ToolRegistry.register(spec, handler)`, `.get(name)`,
`.specs_for(enabled_names)` (in the order given, unknown names skipped), `.run(name, args, **ctx)`
(validates the arguments, times the handler, turns every exception into `ok=False`).
A process-wide `registry` instance holds the built-in tools.

`validate_args(schema, value)` supports the subset we use: type object / string / number /
integer / boolean / array, `properties`, `required`, `additionalProperties: false`, `enum`,
`maxLength`, `items`. It returns readable Spanish errors ([] = valid).
`validate_schema(schema)` checks a (tenant-written) schema stays inside that subset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

logger = logging.getLogger("ai_agents.tools")

DEFAULT_MAX_CONTENT_CHARS = 4000
TRUNCATION_MARK = " …[truncado]"
TYPES: tuple[str, ...] = ("object", "string", "number", "integer", "boolean", "array")
SCHEMA_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "maxLength",
        "items",
        "description",
        "title",
        "default",
    }
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    content: str = ""
    data: Any = None
    error: str | None = None
    duration_ms: int = 0


def truncate(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters, marked when cut."""
    if len(text) <= max_chars:
        return text
    if max_chars < 2 * len(TRUNCATION_MARK):  # too short for a mark: plain cut
        return text[: max(0, max_chars)]
    return text[: max_chars - len(TRUNCATION_MARK)] + TRUNCATION_MARK


# --- Argument validation -----------------------------------------------------------------------
def _type_ok(expected: str, value: Any) -> bool:
    if expected == "object":
        return isinstance(value, Mapping)
    if expected == "array":
        return isinstance(value, list)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


_TYPE_NAMES = {
    "object": "un objeto",
    "array": "una lista",
    "string": "un texto",
    "boolean": "verdadero o falso",
    "integer": "un número entero",
    "number": "un número",
}


def validate_args(schema: Mapping[str, Any], value: Any, path: str = "") -> list[str]:
    """Readable Spanish errors for `value` against `schema` (the supported subset)."""
    where = path or _("argumentos")
    errors: list[str] = []
    expected = schema.get("type")
    if isinstance(expected, str) and not _type_ok(expected, value):
        return [
            _("%(where)s: debe ser %(type)s.")
            % {"where": where, "type": _TYPE_NAMES.get(expected, expected)}
        ]
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        errors.append(
            _("%(where)s: valor no permitido (use uno de: %(values)s).")
            % {"where": where, "values": ", ".join(str(v) for v in enum)}
        )
    max_length = schema.get("maxLength")
    if isinstance(max_length, int) and isinstance(value, str) and len(value) > max_length:
        errors.append(_("%(where)s: máximo %(n)s caracteres.") % {"where": where, "n": max_length})
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                errors.append(_("%(where)s: falta «%(name)s».") % {"where": where, "name": name})
        for name, item in value.items():
            sub = f"{path}.{name}" if path else str(name)
            if name in properties:
                errors.extend(validate_args(properties[name], item, sub))
            elif schema.get("additionalProperties") is False:
                errors.append(_("%(where)s: argumento no permitido.") % {"where": sub})
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            errors.extend(validate_args(schema["items"], item, f"{where}[{index}]"))
    return errors


def validate_schema(schema: Any, path: str = "") -> list[str]:
    """Errors when `schema` uses something outside the supported subset."""
    where = path or _("esquema")
    if not isinstance(schema, Mapping):
        return [_("%(where)s: debe ser un objeto JSON.") % {"where": where}]
    errors: list[str] = []
    unknown = sorted(set(schema) - SCHEMA_KEYS)
    if unknown:
        errors.append(
            _("%(where)s: claves no soportadas: %(keys)s.")
            % {"where": where, "keys": ", ".join(unknown)}
        )
    kind = schema.get("type")
    if kind is not None and kind not in TYPES:
        errors.append(
            _("%(where)s: tipo «%(type)s» no soportado (use %(valid)s).")
            % {"where": where, "type": kind, "valid": ", ".join(TYPES)}
        )
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, Mapping):
            errors.append(_("%(where)s: «properties» debe ser un objeto.") % {"where": where})
        else:
            for name, sub in properties.items():
                errors.extend(validate_schema(sub, f"{path}.{name}" if path else str(name)))
    required = schema.get("required")
    if required is not None and (
        not isinstance(required, list) or not all(isinstance(r, str) for r in required)
    ):
        errors.append(_("%(where)s: «required» debe ser una lista de nombres.") % {"where": where})
    enum = schema.get("enum")
    if enum is not None and (not isinstance(enum, list) or not enum):
        errors.append(_("%(where)s: «enum» debe ser una lista no vacía.") % {"where": where})
    max_length = schema.get("maxLength")
    if max_length is not None and (
        not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 0
    ):
        errors.append(_("%(where)s: «maxLength» debe ser un entero >= 0.") % {"where": where})
    if "items" in schema:
        errors.extend(validate_schema(schema["items"], f"{where}[]"))
    return errors


# --- Registry ----------------------------------------------------------------------------------
ToolHandler = Callable[..., ToolResult]


@dataclass(frozen=True)
class RegisteredTool:
    spec: ToolSpec
    handler: ToolHandler


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(self, spec: ToolSpec, handler: ToolHandler) -> RegisteredTool:
        if spec.name in self._tools:
            raise ValueError(f"tool already registered: {spec.name}")
        problems = validate_schema(spec.args_schema)
        if problems:
            raise ValueError(f"invalid args_schema for {spec.name}: {problems}")
        tool = RegisteredTool(spec=spec, handler=handler)
        self._tools[spec.name] = tool
        return tool

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs_for(self, enabled_names: Iterable[str]) -> list[ToolSpec]:
        seen: set[str] = set()
        specs = []
        for name in enabled_names:
            tool = self._tools.get(name)
            if tool is not None and name not in seen:
                seen.add(name)
                specs.append(tool.spec)
        return specs

    def run(
        self,
        name: str,
        args: Any,
        *,
        max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
        **context: Any,
    ) -> ToolResult:
        """Validate and run; never raises. `context` goes to the handler as keyword arguments."""
        started = time.monotonic()
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(ok=False, error=_("Herramienta desconocida: %(n)s.") % {"n": name})
        errors = validate_args(tool.spec.args_schema, args)
        if errors:
            return ToolResult(ok=False, error=" ".join(errors), duration_ms=_ms(started))
        try:
            result = tool.handler(args, **context)
        except Exception as exc:  # a tool failure is a result, not a crash
            logger.warning("tool_failed name=%s error=%s", name, type(exc).__name__)
            return ToolResult(
                ok=False,
                error=_("La herramienta falló: %(e)s") % {"e": type(exc).__name__},
                duration_ms=_ms(started),
            )
        return ToolResult(
            ok=result.ok,
            content=truncate(result.content, max_content_chars),
            data=result.data,
            error=result.error,
            duration_ms=result.duration_ms or _ms(started),
        )


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


registry = ToolRegistry()
