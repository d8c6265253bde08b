from typing import Any

import pytest
from django.core.exceptions import ValidationError

from ai_agents.rules.escalation import (
    EscalationDecision,
    EscalationTrigger,
    default_escalation_triggers,
    evaluate_escalation,
    failure_decision,
    parse_escalation_triggers,
    similar_messages,
)


def evaluate(triggers: Any, text: str = "hola", **kw: Any) -> EscalationDecision | None:
    parsed = (
        parse_escalation_triggers(triggers)
        if triggers and isinstance(triggers[0], dict)
        else triggers
    )
    args: dict[str, Any] = {
        "sentiment": None,
        "intent": None,
        "confidence": None,
        "recent_user_texts": [],
        "model_requested": False,
        "model_reason": None,
    }
    args.update(kw)
    return evaluate_escalation(parsed, text=text, **args)


KEYWORD = [
    {"type": "keyword", "condition": {"keywords": ["gerente", "demanda legal"]}, "priority": "high"}
]


def test_keyword_fires_and_near_miss_does_not() -> None:
    decision = evaluate(KEYWORD, "Quiero ver al GERENTE ya")
    assert decision is not None
    assert (decision.reason, decision.priority, decision.trigger_type) == (
        "keyword_match",
        "high",
        "keyword",
    )
    assert "gerente" in decision.detail
    assert evaluate(KEYWORD, "los gerentes de la tienda") is None
    assert evaluate(KEYWORD, "una demanda, legalmente") is None


def test_keyword_agente_excludes_trade_agent() -> None:
    triggers = [
        {"type": "keyword", "condition": {"keywords": ["agente"], "exclude": ["agente de envíos"]}}
    ]
    assert evaluate(triggers, "quiero un agente") is not None
    assert evaluate(triggers, "¿cuánto cobra el agente de envíos?") is None


def test_sentiment_threshold() -> None:
    triggers = [{"type": "sentiment", "condition": {"threshold": -0.6}, "priority": "urgent"}]
    assert evaluate(triggers, sentiment=-0.8).reason == "negative_sentiment"  # type: ignore[union-attr]  # None fails the test as well
    assert evaluate(triggers, sentiment=-0.6) is not None
    assert evaluate(triggers, sentiment=-0.59) is None
    assert evaluate(triggers, sentiment=None) is None


def test_a_positive_sentiment_threshold_reads_as_the_specs_negativity() -> None:
    """The negativity form, `sentiment.negative > threshold`: {"threshold": 0.7} escalates a
    sentiment below -0.7, never a neutral or mildly negative message."""
    triggers = [{"type": "sentiment", "condition": {"threshold": 0.7}, "priority": "high"}]
    decision = evaluate(triggers, sentiment=-0.8)
    assert decision is not None and decision.reason == "negative_sentiment"
    assert decision.priority == "high"
    for calm in (0.9, 0.0, -0.5, -0.7):
        assert evaluate(triggers, sentiment=calm) is None


def test_intent_trigger() -> None:
    triggers = [{"type": "intent", "condition": {"intents": ["escalate", "complaint"]}}]
    decision = evaluate(triggers, intent="complaint")
    assert (
        decision is not None and decision.reason == "intent_match" and decision.priority == "medium"
    )
    assert evaluate(triggers, intent="complaints") is None
    assert evaluate(triggers, intent=None) is None


def test_confidence_trigger() -> None:
    triggers = [{"type": "confidence", "condition": {"threshold": 0.4}}]
    assert evaluate(triggers, confidence=0.39).reason == "low_confidence"  # type: ignore[union-attr]  # None fails the test as well
    assert evaluate(triggers, confidence=0.4) is None
    assert evaluate(triggers, confidence=None) is None


def test_loop_detection() -> None:
    triggers = [{"type": "loop_detection", "condition": {"max_similar": 3, "window": 5}}]
    recent = ["¿Dónde está mi pedido?", "ok", "donde esta mi pedido"]
    decision = evaluate(triggers, "DÓNDE ESTÁ MI PEDIDO!!", recent_user_texts=recent)
    assert decision is not None and decision.reason == "conversation_loop"
    # very similar (Jaccard 4/5 = 0.8) counts too
    assert evaluate(triggers, "donde esta mi pedido 123", recent_user_texts=recent) is not None
    # near misses: only twice, or different enough, or outside the window
    assert (
        evaluate(triggers, "donde esta mi pedido", recent_user_texts=["donde esta mi pedido"])
        is None
    )
    assert evaluate(triggers, "donde esta mi factura", recent_user_texts=recent) is None
    old = ["donde esta mi pedido", "donde esta mi pedido", "a", "b", "c", "d", "e"]
    assert evaluate(triggers, "donde esta mi pedido", recent_user_texts=old) is None


def test_loop_detection_ignores_short_answers_unless_configured() -> None:
    triggers = [{"type": "loop_detection", "condition": {"max_similar": 3}}]
    assert evaluate(triggers, "sí", recent_user_texts=["Sí", "si"]) is None
    one_word = [{"type": "loop_detection", "condition": {"max_similar": 3, "min_words": 1}}]
    assert evaluate(one_word, "sí", recent_user_texts=["Sí", "si"]) is not None


def test_similar_messages() -> None:
    assert similar_messages("Hola, ¿qué tal?", "hola que tal")
    assert not similar_messages("hola", "adios")
    assert not similar_messages("", "")


def test_user_request_builtin_phrases() -> None:
    triggers = [{"type": "user_request", "priority": "high"}]
    for text in [
        "Quiero hablar con una persona",
        "¡Un agente, por favor!",
        "I want to talk to a human",
    ]:
        decision = evaluate(triggers, text)
        assert decision is not None and decision.reason == "user_request", text
    for text in [
        "quiero hablar con un agente de seguros",
        "¿el agente de envíos ya salió?",
        "las personas por favor hagan fila",
        "humanidad",
    ]:
        assert evaluate(triggers, text) is None, text


def test_user_request_extra_phrases_and_excludes() -> None:
    triggers = [
        {
            "type": "user_request",
            "condition": {
                "phrases": ["quiero un supervisor"],
                "exclude": ["persona real de prueba"],
            },
        }
    ]
    assert evaluate(triggers, "QUIERO UN SUPERVISOR") is not None
    assert evaluate(triggers, "es una persona real") is not None
    assert evaluate(triggers, "una persona real de prueba") is None


def test_highest_priority_wins_then_config_order() -> None:
    triggers = [
        {"type": "keyword", "condition": {"keywords": ["malo"]}, "priority": "low", "message": "A"},
        {
            "type": "sentiment",
            "condition": {"threshold": -0.5},
            "priority": "urgent",
            "message": "B",
        },
        {"type": "confidence", "condition": {"threshold": 0.5}, "priority": "urgent"},
    ]
    decision = evaluate(triggers, "servicio malo", sentiment=-0.9, confidence=0.1)
    assert decision is not None and decision.trigger_type == "sentiment" and decision.message == "B"
    decision = evaluate(triggers, "servicio malo")
    assert decision is not None and decision.priority == "low" and decision.message == "A"


def test_model_request() -> None:
    decision = evaluate([], model_requested=True, model_reason="cliente molesto")
    assert decision == EscalationDecision(
        "model_request", "medium", "model", "cliente molesto", layer="model"
    )
    with_user = evaluate(default_escalation_triggers(), model_requested=True, model_reason=None)
    assert with_user is not None and with_user.priority == "high"
    assert evaluate([], model_requested=False, model_reason="x") is None


def test_skipped_types_are_not_checked_but_still_give_the_model_request_its_priority() -> None:
    # The engine's check after the model skips what the check before it found clear.
    triggers = parse_escalation_triggers(
        [*KEYWORD, {"type": "user_request", "priority": "urgent"}, {"type": "confidence"}]
    )
    assert evaluate(triggers, text="quiero hablar con el gerente") is not None
    skip = {"keyword", "user_request", "loop_detection"}
    assert evaluate(triggers, text="quiero hablar con el gerente", skip_types=skip) is None
    low = evaluate(triggers, text="quiero hablar con el gerente", confidence=0.1, skip_types=skip)
    assert low is not None and low.reason == "low_confidence"
    asked = evaluate(triggers, model_requested=True, model_reason="x", skip_types=skip)
    assert asked is not None and (asked.reason, asked.priority) == ("model_request", "urgent")


def test_flat_parameters_and_roundtrip() -> None:
    triggers = parse_escalation_triggers(
        [{"type": "confidence", "threshold": 0.3}, {"type": "loop_detection", "max_similar": 4}]
    )
    assert triggers[0].threshold == 0.3 and triggers[1].max_similar == 4
    assert parse_escalation_triggers([t.to_dict() for t in triggers]) == triggers
    assert parse_escalation_triggers(None) == []
    assert isinstance(default_escalation_triggers()[0], EscalationTrigger)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"type": "keyword"}, "debe ser una lista"),
        ([{"type": "magic"}], "tipo «magic» no válido"),
        ([{"type": "keyword", "condition": {}}], "falta la lista"),
        ([{"type": "keyword", "condition": {"keywords": []}}], "no puede estar vacía"),
        (
            [{"type": "intent", "priority": "asap", "condition": {"intents": ["a"]}}],
            "prioridad «asap»",
        ),
        ([{"type": "sentiment", "condition": {"threshold": -3}}], "entre -1 y 1"),
        ([{"type": "confidence", "condition": {"threshold": "alta"}}], "debe ser un número"),
        ([{"type": "loop_detection", "condition": {"max_similar": 1}}], "entre 2 y 20"),
        ([{"type": "user_request", "message": 5}], "«message» debe ser texto"),
        (["keyword"], "debe ser un objeto"),
    ],
)
def test_invalid_triggers_readable_errors(raw: Any, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_escalation_triggers(raw)
    assert any(fragment in m for m in info.value.messages), info.value.messages


@pytest.mark.parametrize(
    ("kind", "priority"), [("llm_failure", "high"), ("timeout", "high"), ("no_credits", "urgent")]
)
def test_failure_decision(kind: str, priority: str) -> None:
    decision = failure_decision(kind)  # type: ignore[arg-type]  # parametrized as plain strings
    assert (decision.reason, decision.priority, decision.trigger_type) == (kind, priority, kind)
    assert decision.detail


def test_failure_decision_unknown_kind() -> None:
    with pytest.raises(ValueError):
        failure_decision("boom")  # type: ignore[arg-type]  # the invalid value under test


def test_default_triggers_never_fire_on_a_single_ambiguous_word() -> None:
    from ai_agents.config import escalation_defaults

    defaults = parse_escalation_triggers(escalation_defaults())
    for text in ["¿el menú es por persona?", "¿trabajan con algún agente de paquetería?", "humano"]:
        decision = evaluate(defaults, text)
        if text != "humano":
            assert decision is None, (text, decision)
    for text in ["¿me pasas con facturación?", "que me marque la dueña"]:
        decision = evaluate(defaults, text)
        assert decision is not None and decision.reason == "user_request", text
        assert decision.layer == "rules" and "«" in decision.detail


def test_configured_keyword_triggers_still_match_whole_words_with_exclusions() -> None:
    triggers = [
        {
            "type": "keyword",
            "condition": {"keywords": ["persona"], "exclude": ["por persona"]},
            "priority": "high",
        }
    ]
    decision = evaluate(triggers, "Quiero una PERSONA")
    assert decision is not None and decision.layer == "trigger"
    assert decision.detail == "palabra clave «persona»"
    assert evaluate(triggers, "¿el menú es por persona?") is None
    assert evaluate(triggers, "personas") is None


def test_loop_decisions_say_so() -> None:
    triggers = [{"type": "loop_detection", "condition": {"max_similar": 2}}]
    decision = evaluate(
        triggers, "¿Dónde está mi pedido?", recent_user_texts=["¿Dónde está mi pedido?"]
    )
    assert decision is not None
    assert (decision.reason, decision.layer) == ("conversation_loop", "loop")
