"""Tenant-defined HTTP tools, executed through `erp.http.client.HttpClient` with the SSRF guard on.

`execute_http_tool(config, args, tool_timeout_ms=10000) -> ToolResult` never raises:

- the arguments are validated against `config.args_schema` first;
- `{name}` placeholders in `url_template` are replaced by the argument, URL-encoded with nothing
  kept safe (a "/" or "?" in a value cannot change the path); placeholders are allowed only in
  the path and query, never in the scheme or host; a placeholder without an argument is an error;
- `{contact.external_id}`, `{contact.phone}`, `{contact.email}`, `{contact.name}` and
  `{conversation.id}` in the URL's path or query and in header values are the conversation's
  own, filled by the pipeline (`facts`), never by the model: a tool the tenant scopes with them
  can only reach this customer's records, whatever the model writes; a fact the contact lacks
  fails the call (an empty value could widen the lookup);
- the remaining arguments go as query parameters for GET/DELETE (booleans as true/false, lists as
  repeated parameters, objects as JSON text) and as a JSON body for POST/PUT/PATCH;
- timeout: `min(config.timeout_ms, tool_timeout_ms)` (the processing config's cap);
- the SSRF guard (`guard=True`) refuses private, loopback and link-local destinations unless
  `settings.HTTP_ALLOW_PRIVATE_NETWORKS` is on; redirects are not followed;
- the response text (JSON re-serialised compactly) is truncated to `max_response_chars`;
  `data` holds the parsed JSON when the whole response fit;
- every failure (timeout, refused destination, non-2xx, too large, bad arguments) is
  `ToolResult(ok=False, error=<readable Spanish text>)`; for a non-2xx the (redacted, truncated)
  body excerpt is the `content`.
Headers (already decrypted by the caller) are sent as they are and never logged (erp.http
redacts auth headers).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from django.utils.translation import gettext as _

from erp.http.client import HttpClient, HttpResponse
from erp.http.errors import (
    HttpBlockedDestination,
    HttpError,
    HttpResponseTooLarge,
    HttpStatusError,
    HttpTimeout,
)

from .registry import ToolResult, truncate, validate_args, validate_schema

METHODS: tuple[str, ...] = ("GET", "POST", "PUT", "PATCH", "DELETE")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
DEFAULT_TOOL_TIMEOUT_MS = 10_000  # processing config tool_timeout_ms default
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FACT = re.compile(r"\{((?:contact|conversation)\.[A-Za-z_]+)\}")
FACTS: tuple[str, ...] = (
    "contact.external_id",
    "contact.phone",
    "contact.email",
    "contact.name",
    "conversation.id",
)


@dataclass(frozen=True)
class HttpToolConfig:
    method: str
    url_template: str
    headers: Mapping[str, str] = field(default_factory=dict)
    args_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    timeout_ms: int = DEFAULT_TOOL_TIMEOUT_MS
    max_response_chars: int = 4000


def placeholders(url_template: str) -> list[str]:
    return _PLACEHOLDER.findall(url_template)


def _facts_used(config: HttpToolConfig) -> set[str]:
    """The `{contact.…}` / `{conversation.…}` names in the URL and the header values."""
    texts = (config.url_template, *map(str, config.headers.values()))
    return {fact for text in texts for fact in _FACT.findall(text)}


def validate_http_tool_config(config: HttpToolConfig) -> list[str]:
    """Readable Spanish problems of a tool definition ([] = valid); for the admin and the API."""
    errors: list[str] = []
    if config.method.upper() not in METHODS:
        errors.append(
            _("Método «%(m)s» no válido (use %(valid)s).")
            % {"m": config.method, "valid": ", ".join(METHODS)}
        )
    parts = urlsplit(config.url_template)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        errors.append(_("La URL debe empezar por http:// o https:// e incluir el servidor."))
    elif "{" in parts.netloc or "{" in parts.scheme:
        errors.append(_("Las variables {…} solo pueden ir en la ruta o la consulta de la URL."))
    errors.extend(validate_schema(config.args_schema))
    for fact in _facts_used(config):
        if fact not in FACTS:
            errors.append(
                _("Variable {%(n)s} desconocida; se admiten: %(known)s.")
                % {"n": fact, "known": ", ".join("{" + f + "}" for f in FACTS)}
            )
    properties = config.args_schema.get("properties") or {}
    for name in placeholders(config.url_template):
        if isinstance(properties, Mapping) and name not in properties:
            errors.append(
                _("La URL usa {%(n)s}, que no está en el esquema de argumentos.") % {"n": name}
            )
    if not isinstance(config.timeout_ms, int) or config.timeout_ms <= 0:
        errors.append(_("El tiempo de espera debe ser un entero positivo (ms)."))
    if not isinstance(config.max_response_chars, int) or config.max_response_chars <= 0:
        errors.append(_("El máximo de caracteres de respuesta debe ser un entero positivo."))
    for key, value in config.headers.items():
        if not isinstance(key, str) or not isinstance(value, str) or "\n" in key + value:
            errors.append(_("Cabecera no válida: %(k)s.") % {"k": key})
    return errors


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return [_query_value(v) for v in value]
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _path_value(value: Any) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, Mapping | list):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = "" if value is None else str(value)
    return quote(text, safe="")


class _Failed(Exception):
    """A call that ends as `ToolResult(ok=False)`: the readable error, and any body excerpt."""

    def __init__(self, error: str, content: str = "") -> None:
        super().__init__(error)
        self.error = error
        self.content = content


@dataclass(frozen=True)
class _Request:
    method: str
    url: str
    headers: dict[str, str]
    rest: dict[str, Any]  # the arguments not in the URL: query parameters or JSON body


def execute_http_tool(
    config: HttpToolConfig,
    args: Any,
    *,
    tool_timeout_ms: int = DEFAULT_TOOL_TIMEOUT_MS,
    client: HttpClient | None = None,
    facts: Mapping[str, str] | None = None,
) -> ToolResult:
    started = time.monotonic()
    try:
        request = _request_of(config, _checked_args(config, args), facts=facts or {})
        timeout_s = max(1, min(config.timeout_ms, tool_timeout_ms)) / 1000
        response = _send(client or HttpClient(guard=True), request, timeout_s=timeout_s)
    except _Failed as failure:
        return ToolResult(
            ok=False,
            content=truncate(failure.content, config.max_response_chars),
            error=failure.error,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
    text, data = _response_text(response)
    content = truncate(text, config.max_response_chars)
    return ToolResult(
        ok=True,
        content=content,
        data=data if content == text else None,
        error=None,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _checked_args(config: HttpToolConfig, args: Any) -> Mapping[str, Any]:
    """The model's arguments, valid against the schema; a tool defined wrongly fails here too."""
    if config.method.upper() not in METHODS:
        raise _Failed(_("Método HTTP no válido: %(m)s.") % {"m": config.method})
    if args is None:
        args = {}
    errors = validate_args(config.args_schema, args)
    if not isinstance(args, Mapping):
        raise _Failed(" ".join(errors) or _("Los argumentos deben ser un objeto."))
    if errors:
        raise _Failed(" ".join(errors))
    if "{" in urlsplit(config.url_template).netloc:
        raise _Failed(_("La URL de la herramienta no es válida."))
    return args


def _request_of(
    config: HttpToolConfig, args: Mapping[str, Any], *, facts: Mapping[str, str]
) -> _Request:
    """URL and headers filled: the conversation's facts first, then the model's arguments."""
    used = placeholders(config.url_template)
    missing = [name for name in used if name not in args]
    if missing:
        raise _Failed(_("Faltan argumentos para la URL: %(n)s.") % {"n": ", ".join(missing)})
    lacking = sorted(f for f in _facts_used(config) if not facts.get(f))
    if lacking:
        raise _Failed(_("La conversación no tiene %(n)s.") % {"n": ", ".join(lacking)})
    url = _FACT.sub(lambda m: quote(facts[m.group(1)], safe=""), config.url_template)
    url = _PLACEHOLDER.sub(lambda m: _path_value(args[m.group(1)]), url)
    headers = {
        key: _FACT.sub(lambda m: " ".join(facts[m.group(1)].split()), str(value))
        for key, value in config.headers.items()
    }
    rest = {k: v for k, v in args.items() if k not in used}
    return _Request(method=config.method.upper(), url=url, headers=headers, rest=rest)


def _send(http: HttpClient, request: _Request, *, timeout_s: float) -> HttpResponse:
    """The response, or `_Failed` with a readable reason (never another exception)."""
    body_method = request.method in BODY_METHODS
    try:
        return http.request(
            request.method,
            request.url,
            params={k: _query_value(v) for k, v in request.rest.items()}
            if not body_method and request.rest
            else None,
            json=request.rest if body_method else None,
            headers=request.headers,
            timeout=timeout_s,
            guard=True,
            max_bytes=MAX_RESPONSE_BYTES,
        )
    except Exception as exc:  # never raise into the pipeline
        raise _failure_of(exc, timeout_s=timeout_s) from exc


def _failure_of(exc: Exception, *, timeout_s: float) -> _Failed:
    if isinstance(exc, HttpTimeout):
        return _Failed(_("El servicio no respondió a tiempo (%(s)s s).") % {"s": timeout_s})
    if isinstance(exc, HttpBlockedDestination):
        return _Failed(_("Destino no permitido: la URL apunta a una red privada o no es http(s)."))
    if isinstance(exc, HttpResponseTooLarge):
        return _Failed(_("La respuesta del servicio es demasiado grande."))
    if isinstance(exc, HttpStatusError):
        error = _("El servicio respondió con error HTTP %(s)s.") % {"s": exc.status}
        return _Failed(error, exc.body)
    if isinstance(exc, HttpError):
        return _Failed(_("No se pudo contactar el servicio (%(e)s).") % {"e": type(exc).__name__})
    if isinstance(exc, ValueError):
        return _Failed(_("La URL de la herramienta no es válida."))
    return _Failed(_("La herramienta falló: %(e)s") % {"e": type(exc).__name__})


def _response_text(response: HttpResponse) -> tuple[str, Any]:
    """The text (JSON re-serialised compactly) and the parsed JSON, if it is JSON."""
    text = response.text
    content_type = str(response.headers.get("content-type", ""))
    if "json" in content_type or text[:1] in ("{", "["):
        try:
            data = json.loads(text)
        except ValueError:
            return text, None
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")), data
    return text, None
