"""System prompt rendering: `{{company_name}}`, `{{agent_name}}`, `{{customer_name}}`,
`{{current_date}}` and `{{var}}` for session variables.

- Single pass: values are inserted literally, a `{{...}}` inside a value is never expanded.
- Built-in names win over session variables of the same name.
- Unknown variables (neither built-in nor a session variable) become empty strings.
- `{{ name }}` with spaces inside the braces is accepted; names are letters, digits, `_`, `.`,
  `-` and start with a letter or `_`.
- `{{current_date}}`: the caller passes an AWARE `now` already in the tenant's time zone; it is
  formatted in Spanish with date, time and zone, e.g.
  "domingo, 29 de noviembre de 2026, 15:25 (America/Mexico_City)". No OS locale is needed.
- Session values: strings as they are, None -> "", dict/list -> JSON, other values -> str().

`validate_prompt_template(template, session_variable_names=())` returns readable Spanish warnings
(malformed or unclosed placeholders, unknown variables); an empty list means all good.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

BUILTIN_VARIABLES: tuple[str, ...] = ("company_name", "agent_name", "customer_name", "current_date")
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_PLACEHOLDER = re.compile(r"\{\{\s*(" + _NAME + r")\s*\}\}")
_ANY_BRACES = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)

_WEEKDAYS = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")
_MONTHS = (
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
)


def format_spanish_datetime(now: datetime) -> str:
    """ "domingo, 29 de noviembre de 2026, 15:25 (America/Mexico_City)"."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware (the tenant's time zone)")
    zone = getattr(now.tzinfo, "key", None) or now.tzname() or ""
    text = (
        f"{_WEEKDAYS[now.weekday()]}, {now.day} de {_MONTHS[now.month - 1]} de {now.year}, "
        f"{now:%H:%M}"
    )
    return f"{text} ({zone})" if zone else text


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def render_system_prompt(
    template: str,
    *,
    company_name: str,
    agent_name: str,
    customer_name: str | None,
    now: datetime,
    session_variables: Mapping[str, Any] | None,
) -> str:
    values: dict[str, str] = {k: _as_text(v) for k, v in (session_variables or {}).items()}
    values.update(
        company_name=company_name or "",
        agent_name=agent_name or "",
        customer_name=customer_name or "",
        current_date=format_spanish_datetime(now),
    )
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), template or "")


def validate_prompt_template(
    template: str, session_variable_names: Iterable[str] = ()
) -> list[str]:
    """Readable warnings about placeholders; [] when every placeholder is well formed and known."""
    known = {*BUILTIN_VARIABLES, *session_variable_names}
    warnings: list[str] = []
    seen: set[str] = set()
    for match in _ANY_BRACES.finditer(template or ""):
        inner = match.group(1).strip()
        if not re.fullmatch(_NAME, inner):
            warnings.append(
                _("El marcador «%(ph)s» está mal formado: use {{nombre}} con letras, dígitos o _.")
                % {"ph": match.group(0)}
            )
        elif inner not in known and inner not in seen:
            seen.add(inner)
            warnings.append(
                _(
                    "La variable «{{%(name)s}}» no es estándar (%(builtin)s): se usará la variable "
                    "de sesión del mismo nombre o quedará vacía."
                )
                % {"name": inner, "builtin": ", ".join(BUILTIN_VARIABLES)}
            )
    rest = _ANY_BRACES.sub("", template or "")
    if "{{" in rest:
        warnings.append(_("Hay un «{{» sin cerrar con «}}»."))
    if "}}" in rest:
        warnings.append(_("Hay un «}}» sin su «{{» de apertura."))
    return warnings
