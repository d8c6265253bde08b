"""`ai_agents.config.agent_config`: an agent's JSON blocks parsed once into typed dataclasses,
with the defaults and the validation messages of `Agent.clean()`."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from ai_agents import config
from ai_agents.config import AgentConfig, ConfigError, agent_config
from ai_agents.models import Agent
from ai_agents.rules.escalation import EscalationTrigger


def agent(**fields: Any) -> Agent:
    return Agent(name="Lucía", **fields)  # unsaved: parsing needs no database


def test_defaults_become_typed_blocks() -> None:
    parsed = agent_config(agent())

    assert isinstance(parsed, AgentConfig)
    assert parsed.history.max_messages == 20
    assert parsed.history.truncation_strategy == "smart"
    assert parsed.processing.llm_timeout_ms == 30000
    assert parsed.processing.total_timeout_ms == 45000
    assert parsed.processing.streaming_enabled is True
    assert parsed.processing.escalate_on_failure is True
    assert parsed.tools == ()
    assert parsed.intents.mode == "hybrid"
    assert parsed.intents.names() == ["escalate", "order_status", "pricing", "support"]
    assert [t.type for t in parsed.triggers] == [
        "user_request",
        "loop_detection",
        "intent",
        "sentiment",
        "confidence",
    ]


def test_stored_values_override_defaults_and_tools_keep_their_order_once() -> None:
    parsed = agent_config(
        agent(
            history_config={"max_messages": 8, "truncation_strategy": "oldest_first"},
            processing_config={"llm_timeout_ms": 2000, "streaming_enabled": False},
            tools_enabled=["contact_get", "knowledge_search", "contact_get"],
        )
    )

    assert (parsed.history.max_messages, parsed.history.truncation_strategy) == (8, "oldest_first")
    assert parsed.history.max_tokens == 4000
    assert parsed.processing.llm_timeout_ms == 2000
    assert parsed.processing.streaming_enabled is False
    assert parsed.tools == ("contact_get", "knowledge_search")


def test_an_intent_that_escalates_adds_one_intent_trigger() -> None:
    parsed = agent_config(
        agent(
            escalation_triggers=[{"type": "sentiment", "condition": {"threshold": -0.5}}],
            intent_detection={
                "mode": "keyword",
                "intents": [
                    {"intent": "refund", "keywords": ["reembolso"], "action": "trigger_escalation"},
                    {"intent": "pricing", "keywords": ["precio"]},
                ],
            },
        )
    )

    assert parsed.intents.mode == "keyword"
    assert parsed.triggers[-1] == EscalationTrigger(
        type="intent", priority="medium", intents=("refund",)
    )
    assert [t.type for t in parsed.triggers] == ["sentiment", "intent"]


def test_parsed_once_per_instance_and_forgotten_by_clean(monkeypatch: Any) -> None:
    calls: list[int] = []
    real = config.config_parse

    def counting(**blocks: Any) -> AgentConfig:
        calls.append(1)
        return real(**blocks)

    monkeypatch.setattr(config, "config_parse", counting)
    one = agent()

    first = agent_config(one)
    assert agent_config(one) is first
    assert len(calls) == 1

    one.processing_config = {"llm_timeout_ms": 1000}
    config.agent_config_forget(one)
    assert agent_config(one).processing.llm_timeout_ms == 1000
    assert len(calls) == 2
    assert agent_config(agent()) is not first  # another instance parses its own


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"processing_config": {"llm_timeout_ms": 30000, "total_timeout_ms": 1000}},
            "processing_config.total_timeout_ms: no puede ser menor que llm_timeout_ms",
        ),
        ({"history_config": {"max_mesages": 3}}, "history_config.max_mesages: clave desconocida"),
        (
            {"history_config": {"truncation_strategy": "random"}},
            "history_config.truncation_strategy: valor no válido: 'random' "
            "(use oldest_first, summarize, smart)",
        ),
        (
            {"history_config": {"max_messages": 1}},
            "history_config.max_messages: valor no válido: 1 (un número entero de 2 a 200)",
        ),
        ({"tools_enabled": "contact_get"}, "tools_enabled: debe ser una lista de nombres"),
    ],
)
def test_invalid_blocks_raise_the_validation_messages(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        agent_config(agent(**fields))

    assert raised.value.messages == [message]


def test_invalid_triggers_and_intents_raise_like_clean() -> None:
    bad = {"escalation_triggers": "keyword", "intent_detection": {"mode": "magic"}}
    for name, value in bad.items():
        with pytest.raises(ValidationError) as from_config:
            agent_config(agent(**{name: value}))
        with pytest.raises(ValidationError) as from_clean:
            getattr(config, f"validate_{name}")(value)
        assert from_config.value.messages == from_clean.value.messages


def test_processing_and_history_follow_their_blocks_edited_in_place_or_replaced() -> None:
    # Validated once while unchanged (a message reads them a dozen times), never stale.
    lucia = agent(processing_config={"messages_per_minute": 5}, history_config={})
    assert lucia.processing["messages_per_minute"] == 5
    assert lucia.processing["llm_timeout_ms"] == 30000  # completed with the defaults
    lucia.processing_config["messages_per_minute"] = 7
    assert lucia.processing["messages_per_minute"] == 7
    lucia.processing["messages_per_minute"] = 99  # a copy: the caller's edits stay its own
    assert lucia.processing["messages_per_minute"] == 7
    lucia.history_config = {"max_messages": 3}
    assert lucia.history["max_messages"] == 3
    lucia.processing_config = {"llm_timeout_ms": 10**9}
    with pytest.raises(ValidationError):
        _ = lucia.processing
