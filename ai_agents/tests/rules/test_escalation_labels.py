"""An escalation told in words: labels in the reader's language, the extractive summary,
and no raw code ever shown to a person."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import translation

from ai_agents.rules.escalation import (
    REASONS,
    EscalationDecision,
    failure_decision,
)
from ai_agents.rules.escalation_labels import (
    REASON_LABELS,
    TRIGGER_LABELS,
    escalation_record,
    escalation_view,
    summary_extractive,
)

AT = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)


def test_every_reason_code_in_use_has_words() -> None:
    in_use = {
        *REASONS.values(),
        "model_request",
        "llm_failure",
        "timeout",
        "no_credits",
        "agent_inactive",
        "no_agent",
        "staff_takeover",
    }
    assert in_use <= set(REASON_LABELS)
    assert {*REASONS, "model", "llm_failure", "timeout", "no_credits"} <= set(TRIGGER_LABELS)


def test_the_view_speaks_spanish_and_english() -> None:
    decision = EscalationDecision(
        reason="user_request",
        priority="high",
        trigger_type="user_request",
        detail="el cliente pidió una persona («hablar con una persona»)",
    )
    info = escalation_record(decision, history=[], text="Quiero hablar con una persona", at=AT)
    with translation.override("es"):
        es = escalation_view(info, reason="user_request", priority="high", at=AT)
    with translation.override("en"):
        en = escalation_view(info, reason="user_request", priority="high", at=AT)
    assert es is not None and en is not None
    assert (es["reason_label"], es["priority_label"]) == ("El cliente pidió una persona", "Alta")
    assert (en["reason_label"], en["priority_label"]) == ("The customer asked for a person", "High")
    assert es["layer"] == "rules" and en["layer_label"] == "Phrase rules"
    assert es["trigger_label"] == "Petición de una persona"
    assert en["trigger_label"] == "Request for a person"
    assert es["detail"] == decision.detail
    assert es["summary"] == "Cliente: Quiero hablar con una persona"
    assert es["at"] == AT.isoformat()


def test_a_failure_reads_as_the_service_failing() -> None:
    info = escalation_record(failure_decision("timeout"), history=[], text="¿Hola?", at=AT)
    with translation.override("en"):
        view = escalation_view(info, reason="timeout", priority="high", at=AT)
    assert view is not None
    assert view["reason_label"] == "The AI model did not answer in time"
    assert view["layer"] == "failure" and view["layer_label"] == "AI service failure"


def test_an_unknown_code_never_reaches_a_person() -> None:
    with translation.override("es"):
        view = escalation_view(
            {"reason": "weird_code", "priority": "odd", "trigger": "x", "layer": "y"},
            reason="weird_code",
            priority="odd",
            at=None,
        )
    assert view is not None
    labels = [view["reason_label"], view["priority_label"], view["trigger_label"]]
    assert labels == ["Otro motivo"] * 3
    assert "weird_code" not in " ".join(labels)


def test_a_staff_takeover_or_an_old_escalation_speaks_from_the_columns() -> None:
    stale = {"reason": "user_request", "priority": "high", "summary": "antiguo", "at": "x"}
    with translation.override("es"):
        view = escalation_view(stale, reason="staff_takeover", priority="medium", at=AT)
    assert view is not None
    assert view["reason_label"] == "Una persona del equipo tomó la conversación"
    assert view["priority_label"] == "Media" and view["summary"] == ""
    assert view["at"] == AT.isoformat()
    assert escalation_view({}, reason="", priority="", at=None) is None


@pytest.mark.parametrize(
    ("history", "text", "expected"),
    [
        (
            [
                ("user", "Hola, pedí una mesa para el sábado"),
                ("assistant", "¿A nombre de quién?"),
                ("user", "De Marta Ruiz"),
                ("assistant", "No encuentro la reserva."),
                ("user", "Pues la hice ayer por teléfono"),
            ],
            "Quiero hablar con el encargado",
            "Cliente: Hola, pedí una mesa para el sábado\n"
            "Asistente: No encuentro la reserva.\n"
            "Cliente: Pues la hice ayer por teléfono\n"
            "Cliente: Quiero hablar con el encargado",
        ),
        ([], "Agente humano", "Cliente: Agente humano"),
        (
            [("user", "Otra vez"), ("assistant", "Dígame"), ("user", "Otra vez")],
            "Otra vez",
            "Cliente: Otra vez\nAsistente: Dígame",
        ),
    ],
)
def test_the_extractive_summary_keeps_the_topic_the_last_answer_and_the_last_words(
    history: list[tuple[str, str]], text: str, expected: str
) -> None:
    with translation.override("es"):
        assert summary_extractive(history, text) == expected


def test_the_extractive_summary_is_short() -> None:
    long = "palabra " * 200
    with translation.override("en"):
        summary = summary_extractive([("user", long), ("assistant", long)], long)
    assert len(summary) <= 600
    assert summary.startswith("Customer: palabra")
    assert all(len(line) <= 200 for line in summary.splitlines())
