"""WhatsApp message templates on the wire: listing a WhatsApp Business Account's templates
(`GET /{waba_id}/message_templates`, paged by `paging.cursors.after` while `paging.next` is
given) and building a template send with its body variables filled.

A template's body says where its variables go: `{{1}}`, `{{2}}` (positional) or
`{{first_name}}` (named, `parameter_format: "NAMED"`). A send gives them in the same order as
`{"type": "text", "text": value}` parameters (named ones add `parameter_name`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ai_agents.channels.whatsapp.graph import GraphClient

FIELDS = "id,name,status,language,category,components,parameter_format"
PAGE_SIZE = 100
MAX_PAGES = 50  # 5,000 templates: more than Meta allows per account
VARIABLE = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")
VALUE_MAX_CHARS = 1024
# Meta refuses a text parameter with a newline, a tab or more than four spaces in a row (132018).
VALUE_REFUSED = re.compile(r"[\n\t\r]| {5,}")


class TemplatesUnavailable(Exception):
    """The list could not be read (the code is Graph's, or http_<status>, or connection)."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code


@dataclass(frozen=True)
class TemplateInfo:
    external_id: str
    name: str
    language: str
    category: str
    status: str
    body_text: str
    variables: list[str]
    parameter_format: str


def template_variables(body_text: str) -> list[str]:
    """The body's variables in order of first appearance, each once."""
    seen: list[str] = []
    for name in VARIABLE.findall(body_text):
        if name not in seen:
            seen.append(name)
    return seen


def template_parse(item: Any) -> TemplateInfo | None:
    """One entry of the list; None when it lacks a name or language."""
    if not isinstance(item, dict) or not item.get("name") or not item.get("language"):
        return None
    body = ""
    for component in item.get("components") or []:
        if isinstance(component, dict) and str(component.get("type", "")).upper() == "BODY":
            body = str(component.get("text") or "")
    return TemplateInfo(
        external_id=str(item.get("id") or "")[:64],
        name=str(item["name"])[:512],
        language=str(item["language"])[:20],
        category=str(item.get("category") or "").lower()[:30],
        status=str(item.get("status") or "").upper()[:30],
        body_text=body,
        variables=template_variables(body),
        parameter_format=str(item.get("parameter_format") or "").upper()[:12],
    )


def templates_fetch(client: GraphClient, waba_id: str) -> list[TemplateInfo]:
    """Every template of the account, page after page (at most MAX_PAGES). Raises
    TemplatesUnavailable when a page cannot be read: a partial list must not delete rows."""
    path = f"{client.base_url}/{quote(waba_id, safe='')}/message_templates"
    found: list[TemplateInfo] = []
    after = ""
    for _page in range(MAX_PAGES):
        params = {"fields": FIELDS, "limit": str(PAGE_SIZE)}
        if after:
            params["after"] = after
        data = _page_get(client, path, params)
        for item in data.get("data") or []:
            info = template_parse(item)
            if info is not None:
                found.append(info)
        paging = _dict(data.get("paging"))
        cursors = _dict(paging.get("cursors"))
        after = str(cursors.get("after") or "")
        if not paging.get("next") or not after:
            return found
    raise TemplatesUnavailable("too_many_pages")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _page_get(client: GraphClient, path: str, params: dict[str, str]) -> dict[str, Any]:
    result = client.json_get(path, params=params)
    if not result.ok:
        raise TemplatesUnavailable(result.error_code, result.error_message)
    return dict(result.data)


def message_template(message: Any) -> dict[str, Any] | None:
    """The template a message was stored to be sent as (`metadata.wa_template`: name,
    language, components, category), or None for a free-form message."""
    chosen = (message.metadata or {}).get("wa_template")
    return chosen if isinstance(chosen, dict) and chosen.get("name") else None


def template_render(body_text: str, values: dict[str, str]) -> str:
    """The body as the customer reads it (what the inbox stores as the message's text)."""
    return VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), body_text)


def template_send_spec(
    *, name: str, language: str, variables: list[str], values: list[str], named: bool
) -> dict[str, Any]:
    """The `template` object of a send (payloads/whatsapp_send_template_request.json)."""
    spec: dict[str, Any] = {"name": name, "language": {"code": language}}
    if variables:
        parameters: list[dict[str, str]] = []
        for variable, value in zip(variables, values, strict=True):
            parameter = {"type": "text", "text": value}
            if named:
                parameter["parameter_name"] = variable
            parameters.append(parameter)
        spec["components"] = [{"type": "body", "parameters": parameters}]
    return spec
