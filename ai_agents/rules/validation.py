"""Helpers shared by the config parsers: readable Spanish errors, all collected at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _


class Errors:
    """Collects readable messages; `raise_if_any()` raises one ValidationError with all of them."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def add(self, message: str) -> None:
        self.messages.append(message)

    def raise_if_any(self) -> None:
        if self.messages:
            raise ValidationError(self.messages)


def string_list(value: Any, where: str, errors: Errors, *, required: bool = False) -> list[str]:
    """A list of non-empty strings (stripped); a readable error otherwise."""
    if value is None:
        if required:
            errors.add(_("%(where)s: falta la lista.") % {"where": where})
        return []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        errors.add(_("%(where)s: debe ser una lista de textos.") % {"where": where})
        return []
    items = [v.strip() for v in value if v.strip()]
    if required and not items:
        errors.add(_("%(where)s: la lista no puede estar vacía.") % {"where": where})
    return items


def number(
    value: Any, where: str, errors: Errors, *, low: float, high: float, default: float | None
) -> float | None:
    """A number in [low, high]; `default` when missing (None default = required)."""
    if value is None:
        if default is None:
            errors.add(_("%(where)s: falta el valor.") % {"where": where})
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.add(_("%(where)s: debe ser un número.") % {"where": where})
        return default
    return float(value) if _in_range(value, where, errors, low=low, high=high) else default


def integer(value: Any, where: str, errors: Errors, *, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        errors.add(_("%(where)s: debe ser un número entero.") % {"where": where})
        return default
    return value if _in_range(value, where, errors, low=low, high=high) else default


def _in_range(value: float, where: str, errors: Errors, *, low: float, high: float) -> bool:
    """True when `value` lies in [low, high]; otherwise says so in `errors` (one message for
    numbers and integers, so both read the same to whoever fixes the configuration)."""
    if low <= value <= high:
        return True
    errors.add(
        _("%(where)s: debe estar entre %(low)s y %(high)s.")
        % {"where": where, "low": low, "high": high}
    )
    return False


def mapping(value: Any, where: str, errors: Errors) -> Mapping[str, Any] | None:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.add(_("%(where)s: debe ser un objeto JSON.") % {"where": where})
        return None
    return value
