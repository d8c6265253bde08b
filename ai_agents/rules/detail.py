"""An escalation's `detail` as parts, worded when it is read.

`detail(template, **parts)` is what the rules give as a decision's detail: a `Detail`, a `str`
(the words in the active language, so every caller that reads it as text keeps working) that
also keeps its Spanish template (a msgid of the catalogue) and its parts (the matched phrase or
keyword, the score and the prototype, the threshold, a count, a nested detail...).
`detail_stored` is what `Conversation.escalation_info["detail"]` keeps:
`{"template": ..., "parts": {...}}`; `detail_text` words it in the active language (the
reader's: the API request's, the inbox user's, the tenant's for the notification e-mails).

Rows stored before hold the detail as a plain text: `detail_text` shows it as it is (a
tolerant reader, no data migration); so does a template it cannot fill.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext


class Detail(str):
    """The detail worded in the language active when it was made, with its template and
    parts to word it again in another."""

    template: str
    parts: dict[str, Any]

    def __new__(cls, template: str, parts: Mapping[str, Any]) -> Detail:
        made = super().__new__(cls, _worded(template, parts))
        made.template, made.parts = template, dict(parts)
        return made

    def __getnewargs__(self) -> tuple[str, dict[str, Any]]:  # type: ignore[override]  # copy, pickle: made again from its parts
        return self.template, self.parts


def detail(template: str, **parts: Any) -> Detail:
    """`template` (mark it with gettext_noop) filled with `parts`, kept as parts."""
    return Detail(template, parts)


def _worded(template: str, parts: Mapping[str, Any]) -> str:
    """The template in the active language filled with the parts (nested ones worded too)."""
    worded = {key: detail_text(v) if isinstance(v, Mapping) else v for key, v in parts.items()}
    try:
        return gettext(template) % worded
    except (KeyError, TypeError, ValueError):
        return ""


def _stored_parts(value: Any) -> Any:
    if not isinstance(value, Detail):
        return value
    return {
        "template": value.template,
        "parts": {k: _stored_parts(v) for k, v in value.parts.items()},
    }


def detail_stored(value: str) -> Any:
    """What the escalation info keeps of a decision's detail: its parts (a `Detail`), or the
    text as it is (a model's stated reason, an empty detail)."""
    return _stored_parts(value) if isinstance(value, Detail) else str(value or "")


def detail_text(stored: Any) -> str:
    """A stored detail in the active language ("" for none; an old plain text as it is)."""
    if isinstance(stored, str):
        return str(stored)
    if not isinstance(stored, Mapping):
        return ""
    template, parts = stored.get("template"), stored.get("parts")
    if not isinstance(template, str) or not template or not isinstance(parts, Mapping):
        return ""
    return _worded(template, parts)
