"""The config parsers' number checks: a value out of range gives the default and one message that
reads the same for numbers and integers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ai_agents.rules.validation import Errors, integer, number


def test_a_number_in_range_is_kept_as_a_float() -> None:
    errors = Errors()

    assert number(3, "umbral", errors, low=0, high=5, default=1.0) == 3.0
    assert errors.messages == []


@pytest.mark.parametrize("check", [number, integer])
def test_out_of_range_gives_the_default_and_says_the_range(check: Callable[..., Any]) -> None:
    errors = Errors()

    value = check(9, "ventana", errors, low=1, high=5, default=2)

    assert value == 2
    assert errors.messages == ["ventana: debe estar entre 1 y 5."]


def test_an_integer_refuses_a_float_and_a_bool() -> None:
    errors = Errors()

    assert integer(2.5, "ventana", errors, low=1, high=5, default=2) == 2
    assert integer(True, "ventana", errors, low=1, high=5, default=2) == 2
    assert errors.messages == ["ventana: debe ser un número entero."] * 2
