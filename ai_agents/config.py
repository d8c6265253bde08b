"""Agent configuration: the JSON blocks of an agent (history, processing, escalation triggers,
intents, tools) with their defaults, readable validation, and one typed view of them.

Each block is stored as JSON; `*_defaults()` gives the product's values and `validate_*` returns the
block completed with defaults or raises `ConfigError` naming the offending key. Unknown keys are
refused so a typo does not silently fall back to a default. `Agent.clean()` runs the validators
before anything is saved.

`agent_config(agent)` parses the five blocks once per agent instance into `AgentConfig`, frozen
dataclasses the engine reads instead of picking keys out of dicts: the parsing (trigger and
intent rules included) is paid once per loaded agent, not at every use.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from ai_agents.rules.escalation import EscalationTrigger, parse_escalation_triggers
from ai_agents.rules.intent import DEFAULT_INTENT_CONFIG, IntentConfig, parse_intent_config

if TYPE_CHECKING:
    from ai_agents.models import Agent


class ConfigError(ValidationError):
    """A configuration block is invalid; `message` names the key."""


HISTORY_STRATEGIES = ("oldest_first", "summarize", "smart")


def history_defaults() -> dict[str, Any]:
    return {
        "max_messages": 20,  # RN-2
        "max_tokens": 4000,
        "truncation_strategy": "smart",
        "summarize_after": 30,
        "summary_prompt": "",
    }


def processing_defaults() -> dict[str, Any]:
    return {
        "llm_timeout_ms": 30000,  # RN-1
        "rag_timeout_ms": 5000,
        "tool_timeout_ms": 10000,
        "total_timeout_ms": 45000,
        "llm_max_retries": 3,  # RN-3
        "llm_retry_delay_ms": 1000,
        "llm_retry_backoff": 2,
        "messages_per_minute": 20,  # RN-4
        "tokens_per_minute": 50000,
        "streaming_enabled": True,
        "streaming_chunk_delay_ms": 0,
        "max_tool_rounds": 3,
        "rag_top_k": 5,
        "rag_min_score": 0.0,
        # After an LLM failure or timeout (RN-5) the fallback message goes out; escalate too?
        # (no credits always escalates: nobody else can answer).
        "escalate_on_failure": True,
        # ...after this many consecutive failures in the conversation (a success resets it).
        "failures_before_escalation": 2,
        # Pushed channels (WhatsApp, e-mail): messages of one contact arriving within this quiet
        # window after the last one are answered by ONE reply (0: one reply per message)...
        "burst_quiet_ms": 2500,
        # ...waiting at most this long after the burst's first message.
        "burst_max_ms": 8000,
    }


def intent_defaults() -> dict[str, Any]:
    """The default intents (`ai_agents.rules.intent.DEFAULT_INTENT_CONFIG`: the escalation
    keywords, plus the excludes that keep "agente de envíos" from reading as "agente")."""
    return copy.deepcopy(DEFAULT_INTENT_CONFIG)


def escalation_defaults() -> list[dict[str, Any]]:
    """No single-word keyword (issue 15): the request-for-a-person detector (`user_request`),
    loop detection (the same message twice, "ya se lo dije", a reference repeated, the same
    answer twice), the model's intent, sentiment and confidence."""
    return [
        {"type": "user_request", "condition": {}, "priority": "medium"},
        {
            "type": "loop_detection",
            "condition": {"max_similar": 2, "window": 10, "similarity": 0.8, "min_words": 3},
            "priority": "medium",
        },
        {"type": "intent", "condition": {"intents": ["escalate"]}, "priority": "medium"},
        {"type": "sentiment", "condition": {"threshold": -0.6}, "priority": "high"},
        {"type": "confidence", "condition": {"threshold": 0.3}, "priority": "low"},
    ]


def _fail(key: str, message: str) -> ConfigError:
    return ConfigError(f"{key}: {message}")


def _object(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(name, _("debe ser un objeto JSON"))
    return dict(value)


def _complete(
    value: Any, name: str, defaults: dict[str, Any], checks: Mapping[str, Callable[[Any], bool]]
) -> dict[str, Any]:
    data = _object(value, name)
    unknown = sorted(set(data) - set(defaults))
    if unknown:
        raise _fail(f"{name}.{unknown[0]}", _("clave desconocida"))
    merged = {**defaults, **data}
    for key, ok in checks.items():
        if not ok(merged[key]):
            message = _("valor no válido: %(value)r") % {"value": merged[key]}
            expected = getattr(ok, "expected", "")
            raise _fail(f"{name}.{key}", f"{message} ({expected})" if expected else message)
    return merged


@dataclass(frozen=True)
class _Check:
    """A value check that can say, in words, what it expects (shown after "valor no válido")."""

    ok: Callable[[Any], bool]
    expected: str

    def __call__(self, value: Any) -> bool:
        return self.ok(value)


def _int_between(low: int, high: int) -> _Check:
    return _Check(
        lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high,
        _("un número entero de %(low)s a %(high)s") % {"low": low, "high": high},
    )


def _number_between(low: float, high: float) -> _Check:
    return _Check(
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and low <= v <= high,
        _("un número de %(low)s a %(high)s") % {"low": low, "high": high},
    )


def validate_history_config(value: Any) -> dict[str, Any]:
    return _complete(
        value,
        "history_config",
        history_defaults(),
        {
            "max_messages": _int_between(2, 200),
            "max_tokens": _int_between(100, 200000),
            "truncation_strategy": _Check(
                lambda v: v in HISTORY_STRATEGIES,
                _("use %(values)s") % {"values": ", ".join(HISTORY_STRATEGIES)},
            ),
            "summarize_after": _int_between(2, 1000),
            "summary_prompt": lambda v: isinstance(v, str),
        },
    )


def validate_processing_config(value: Any) -> dict[str, Any]:
    merged = _complete(
        value,
        "processing_config",
        processing_defaults(),
        {
            "llm_timeout_ms": _int_between(100, 30000),  # RN-1: at most 30 s
            "rag_timeout_ms": _int_between(10, 60000),
            "tool_timeout_ms": _int_between(10, 60000),
            "total_timeout_ms": _int_between(100, 300000),
            "llm_max_retries": _int_between(0, 10),
            "llm_retry_delay_ms": _int_between(0, 60000),
            "llm_retry_backoff": _number_between(1, 10),
            "messages_per_minute": _int_between(1, 10000),
            "tokens_per_minute": _int_between(100, 10_000_000),
            "streaming_enabled": _Check(lambda v: isinstance(v, bool), _("true o false")),
            "streaming_chunk_delay_ms": _int_between(0, 5000),
            "max_tool_rounds": _int_between(0, 10),
            "rag_top_k": _int_between(1, 50),
            "rag_min_score": _number_between(0, 1),
            "escalate_on_failure": _Check(lambda v: isinstance(v, bool), _("true o false")),
            "failures_before_escalation": _int_between(1, 10),
            "burst_quiet_ms": _int_between(0, 10000),
            "burst_max_ms": _int_between(0, 30000),
        },
    )
    if merged["burst_max_ms"] < merged["burst_quiet_ms"]:
        raise _fail("processing_config.burst_max_ms", _("no puede ser menor que burst_quiet_ms"))
    if merged["total_timeout_ms"] < merged["llm_timeout_ms"]:
        raise _fail(
            "processing_config.total_timeout_ms",
            _("no puede ser menor que llm_timeout_ms"),
        )
    return merged


def _string_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) and s.strip() for s in v)


def validate_intent_detection(value: Any) -> dict[str, Any]:
    """The documented shape (`method`, `keyword_intents`, `known_intents`) or the units' shape
    (`mode`, `intents`), checked by `ai_agents.rules.intent.parse_intent_config`."""
    data = _intent_block(value)
    parse_intent_config(data)
    return data


def _intent_block(value: Any) -> dict[str, Any]:
    if value is None or value == {}:
        return intent_defaults()
    return _object(value, "intent_detection")


def validate_escalation_triggers(value: Any) -> list[dict[str, Any]]:
    """Checked by `ai_agents.rules.escalation.parse_escalation_triggers` (every problem
    listed, naming the trigger and the key)."""
    if value is None:
        return escalation_defaults()
    parse_escalation_triggers(value)
    return list(value)


def _triggers_parse(value: Any) -> list[EscalationTrigger]:
    return parse_escalation_triggers(escalation_defaults() if value is None else value)


def validate_tools_enabled(value: Any) -> list[str]:
    if value is None:
        return []
    if not _string_list(value) and value != []:
        raise _fail("tools_enabled", _("debe ser una lista de nombres"))
    return list(dict.fromkeys(value))


# --- the typed view ------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryConfig:
    """`history_config`: how much of the conversation goes to the model (RN-2)."""

    max_messages: int
    max_tokens: int
    truncation_strategy: str  # one of HISTORY_STRATEGIES
    summarize_after: int
    summary_prompt: str


@dataclass(frozen=True)
class ProcessingConfig:
    """`processing_config`: time budgets (RN-1), retries (RN-3), rate limits (RN-4), streaming,
    tool rounds, retrieval and what a failure does (RN-5)."""

    llm_timeout_ms: int
    rag_timeout_ms: int
    tool_timeout_ms: int
    total_timeout_ms: int
    llm_max_retries: int
    llm_retry_delay_ms: int
    llm_retry_backoff: float
    messages_per_minute: int
    tokens_per_minute: int
    streaming_enabled: bool
    streaming_chunk_delay_ms: int
    max_tool_rounds: int
    rag_top_k: int
    rag_min_score: float
    escalate_on_failure: bool
    failures_before_escalation: int
    burst_quiet_ms: int
    burst_max_ms: int


@dataclass(frozen=True)
class AgentConfig:
    """An agent's five configuration blocks, validated and parsed.

    `triggers` are the escalation triggers followed by one intent trigger (medium priority) for
    every configured intent whose `action` is "trigger_escalation" and that no intent trigger
    names yet, so the engine evaluates one list."""

    history: HistoryConfig
    processing: ProcessingConfig
    triggers: tuple[EscalationTrigger, ...]
    intents: IntentConfig
    tools: tuple[str, ...]


_CACHE_ATTR = "_agent_config"


def agent_config(agent: Agent) -> AgentConfig:
    """The agent's configuration, parsed on first use and kept on this instance (a reloaded
    agent parses again). Raises `ValidationError` (`ConfigError` for the history and processing
    blocks) with the same messages as `Agent.clean()` when a stored block is invalid.
    `Agent.clean()` forgets the parsed copy, as it rewrites the blocks."""
    cached: AgentConfig | None = agent.__dict__.get(_CACHE_ATTR)
    if cached is None:
        cached = config_parse(
            history=agent.history_config,
            processing=agent.processing_config,
            triggers=agent.escalation_triggers,
            intents=agent.intent_detection,
            tools=agent.tools_enabled,
        )
        agent.__dict__[_CACHE_ATTR] = cached
    return cached


def agent_config_forget(agent: Agent) -> None:
    """Drops the parsed copy (after the blocks were changed on this instance)."""
    agent.__dict__.pop(_CACHE_ATTR, None)


def config_parse(
    *, history: Any, processing: Any, triggers: Any, intents: Any, tools: Any
) -> AgentConfig:
    """The five stored JSON blocks as an `AgentConfig` (missing keys take the defaults)."""
    intent_config = parse_intent_config(_intent_block(intents))
    return AgentConfig(
        history=HistoryConfig(**validate_history_config(history)),
        processing=ProcessingConfig(**validate_processing_config(processing)),
        triggers=_with_intent_triggers(_triggers_parse(triggers), intent_config),
        intents=intent_config,
        tools=tuple(validate_tools_enabled(tools)),
    )


def _with_intent_triggers(
    parsed: list[EscalationTrigger], intents: IntentConfig
) -> tuple[EscalationTrigger, ...]:
    covered = {name for t in parsed if t.type == "intent" for name in t.intents}
    actions = [
        EscalationTrigger(type="intent", priority="medium", intents=(d.intent,))
        for d in intents.intents
        if d.action == "trigger_escalation" and d.intent not in covered
    ]
    return (*parsed, *actions)
