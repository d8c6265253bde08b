"""What the fake Graph API refuses in a send, like Meta does: error 131009 "Parameter value
is not valid" for a text body over 4096 characters or an interactive message outside the
documented limits (reply buttons: 1-3, title 1-20 characters, id 1-256, titles and ids unique;
list: button 1-20, 1-10 sections, 1-10 rows in all, row title 1-24, description up to 72, id
1-200, ids unique, a section title (up to 24) required when there are several; body 1-1024).

`send_problem(body)` names the first problem, or returns None for a valid body.
`template_params_problem(body)`: Meta's 132018 for a template text parameter with a newline,
a tab or more than four consecutive spaces.
"""

from __future__ import annotations

import re
from typing import Any

TEXT_MAX = 4096
BODY_MAX = 1024
_PARAM_REFUSED = re.compile(r"[\n\t]| {5,}")
PARAM_DETAILS = "Param text cannot have new-line/tab characters or more than 4 consecutive spaces"


def _length_ok(value: Any, low: int, high: int) -> bool:
    return isinstance(value, str) and low <= len(value) <= high


def send_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body is not an object"
    kind = body.get("type")
    if kind == "text":
        text = (body.get("text") or {}).get("body")
        return None if _length_ok(text, 1, TEXT_MAX) else "text.body must be 1-4096 characters"
    if kind != "interactive":
        return None
    interactive = body.get("interactive")
    if not isinstance(interactive, dict):
        return "interactive is required"
    text = (interactive.get("body") or {}).get("text")
    if not _length_ok(text, 1, BODY_MAX):
        return "interactive.body.text must be 1-1024 characters"
    action = interactive.get("action")
    if not isinstance(action, dict):
        return "interactive.action is required"
    if interactive.get("type") == "button":
        return _buttons_problem(action.get("buttons"))
    if interactive.get("type") == "list":
        return _list_problem(action)
    return "interactive.type must be button or list"


def _buttons_problem(buttons: Any) -> str | None:
    if not isinstance(buttons, list) or not 1 <= len(buttons) <= 3:
        return "action.buttons must hold 1-3 buttons"
    ids, titles = set(), set()
    for button in buttons:
        reply = button.get("reply") if isinstance(button, dict) else None
        if button.get("type") != "reply" or not isinstance(reply, dict):
            return "each button must be {type: reply, reply: {id, title}}"
        if not _length_ok(reply.get("title"), 1, 20):
            return "button title must be 1-20 characters"
        if not _length_ok(reply.get("id"), 1, 256):
            return "button id must be 1-256 characters"
        ids.add(reply["id"])
        titles.add(reply["title"])
    if len(ids) < len(buttons) or len(titles) < len(buttons):
        return "button ids and titles must be unique"
    return None


def _list_problem(action: dict[str, Any]) -> str | None:
    if not _length_ok(action.get("button"), 1, 20):
        return "action.button must be 1-20 characters"
    sections = action.get("sections")
    if not isinstance(sections, list) or not 1 <= len(sections) <= 10:
        return "action.sections must hold 1-10 sections"
    ids: set[str] = set()
    count = 0
    for section in sections:
        if not isinstance(section, dict) or not isinstance(section.get("rows"), list):
            return "each section needs rows"
        title = section.get("title")
        if (len(sections) > 1 or title is not None) and not _length_ok(title, 1, 24):
            return "section title must be 1-24 characters"
        for row in section["rows"]:
            problem = _row_problem(row)
            if problem:
                return problem
            ids.add(row["id"])
            count += 1
    if not 1 <= count <= 10:
        return "a list holds 1-10 rows"
    return None if len(ids) == count else "row ids must be unique"


def _row_problem(row: Any) -> str | None:
    if not isinstance(row, dict):
        return "a row must be an object"
    if not _length_ok(row.get("id"), 1, 200):
        return "row id must be 1-200 characters"
    if not _length_ok(row.get("title"), 1, 24):
        return "row title must be 1-24 characters"
    if "description" in row and not _length_ok(row["description"], 0, 72):
        return "row description must be at most 72 characters"
    return None


def template_params_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or body.get("type") != "template":
        return None
    template = body.get("template")
    components = template.get("components") if isinstance(template, dict) else None
    for component in components if isinstance(components, list) else []:
        parameters = component.get("parameters") if isinstance(component, dict) else None
        for parameter in parameters if isinstance(parameters, list) else []:
            text = parameter.get("text") if isinstance(parameter, dict) else None
            if isinstance(text, str) and _PARAM_REFUSED.search(text):
                return PARAM_DETAILS
    return None
