from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from ai_agents.rules.prompt import (
    format_spanish_datetime,
    render_system_prompt,
    validate_prompt_template,
)

NOW = datetime(2026, 11, 29, 15, 5, tzinfo=ZoneInfo("America/Mexico_City"))


def render(template: str, **kw: object) -> str:
    args: dict = {
        "company_name": "Acme",
        "agent_name": "Sofía",
        "customer_name": "Juan",
        "now": NOW,
        "session_variables": {"pedido": "A-17", "carrito": ["x", 2], "vip": True, "nada": None},
    }
    args.update(kw)
    return render_system_prompt(template, **args)


def test_builtins_and_session_variables() -> None:
    text = render(
        "Eres {{agent_name}} de {{ company_name }}. Cliente: {{customer_name}}. "
        "Hoy: {{current_date}}. Pedido {{pedido}}, carrito {{carrito}}, vip {{vip}}, [{{nada}}]"
    )
    assert text == (
        "Eres Sofía de Acme. Cliente: Juan. Hoy: domingo, 29 de noviembre de 2026, 15:05 "
        '(America/Mexico_City). Pedido A-17, carrito ["x", 2], vip True, []'
    )


def test_unknown_variable_becomes_empty() -> None:
    assert render("Hola {{desconocida}}!") == "Hola !"


def test_values_are_inserted_literally() -> None:
    text = render(
        "{{customer_name}} / {{nota}}",
        customer_name="{{company_name}}",
        session_variables={"nota": "{{agent_name}} \\1 $&"},
    )
    assert text == "{{company_name}} / {{agent_name}} \\1 $&"


def test_builtin_wins_over_session_variable() -> None:
    assert render("{{company_name}}", session_variables={"company_name": "Otra"}) == "Acme"


def test_missing_customer_name_and_time_zone_conversion() -> None:
    utc_now = datetime(2026, 1, 1, 3, 30, tzinfo=UTC)
    local = utc_now.astimezone(ZoneInfo("America/Mexico_City"))
    text = render("{{customer_name}}|{{current_date}}", customer_name=None, now=local)
    assert text == "|miércoles, 31 de diciembre de 2025, 21:30 (America/Mexico_City)"


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError):
        format_spanish_datetime(datetime(2026, 1, 1, 12, 0))


def test_validate_clean_template() -> None:
    assert validate_prompt_template("Hola {{customer_name}}, soy {{ agent_name }}.") == []
    assert validate_prompt_template("{{pedido}}", ["pedido"]) == []


def test_validate_warnings() -> None:
    warnings = validate_prompt_template("{{nombre cliente}} {{x}} {{x}} {{}} {{abc")
    assert len(warnings) == 4, warnings
    assert "«{{nombre cliente}}» está mal formado" in warnings[0]
    assert "«{{x}}» no es estándar" in warnings[1]
    assert "mal formado" in warnings[2]
    assert "sin cerrar" in warnings[3]
    assert any("sin su" in w for w in validate_prompt_template("hola }}"))
