"""The engine's phases on one `Turn` (ai_agents/conversations/engine.py holds the turn and
stores the outcome): the input bound, the triggers that need no model, and the model phase
(context, retrieval, the tenant's token budget, the model and its tools, the decision).

They read and write only the `Turn` (and the usage rows the gateway defers), never the
conversation or its messages: the playground (ai_agents/services/playground.py) runs them on
a conversation that is never stored."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy

from ai_agents.conversations.actions import ActionSet
from ai_agents.conversations.burst import burst_text
from ai_agents.conversations.context import (
    build_request,
    final_intent,
    history_load,
    keyword_intent,
    rules_for,
)
from ai_agents.conversations.escalation_check import early_escalation, model_escalation
from ai_agents.conversations.model import RequestMaker, converse, number_field
from ai_agents.conversations.retrieval import retrieve
from ai_agents.conversations.session import turn_system_prompt
from ai_agents.conversations.turn import Turn
from ai_agents.knowledge.chunking import estimate_tokens
from ai_agents.rules.input_bound import input_bound
from ai_agents.rules.options import options_clean
from erp import ratelimit
from erp.llm.gateway import CallContext
from erp.llm.types import LlmRequest, LlmResult
from erp.llm.types import Message as LlmMessage

RATE_LIMIT_NOTICE = gettext_lazy(
    "Está enviando mensajes muy rápido. Espere un momento y le respondo."
)
# Told to the model (after the kept part) when a customer message was cut to its channel's limit.
INPUT_CUT_NOTE = gettext_lazy(
    "[Mensaje recortado: tenía %(chars)s caracteres; se muestran los primeros %(kept)s.]"
)


def bound_input(turn: Turn) -> None:
    """Everything after works on the message (a burst's messages, one per line) cut to its
    channel's limit (stored whole)."""
    text, full_length = input_bound(burst_text(turn), turn.conversation.channel)
    turn.text = turn.prompt_text = text
    if full_length is not None:
        turn.meta["input_truncated"] = {"chars": full_length, "kept": len(text)}
        turn.prompt_text = f"{text}\n{INPUT_CUT_NOTE % {'chars': full_length, 'kept': len(text)}}"


def limit_notice(turn: Turn, key: str, limited: dict[str, Any]) -> None:
    turn.meta["rate_limited"] = limited
    if ratelimit.notice_once(key, limited["retry_after_s"]):
        turn.reply_text = str(RATE_LIMIT_NOTICE)


def early_triggers(turn: Turn) -> bool:
    """History, then the triggers that need no model (keywords, loops, the customer asking
    for a person)."""
    turn.rules = rules = rules_for(turn.agent)
    turn.history, turn.recent = history_load(
        conversation=turn.conversation,
        config=turn.agent.history,
        before=turn.message.created_at,
        found=turn.history_found,
    )
    turn.keyword = early = keyword_intent(turn.text, rules)
    if early:
        turn.meta["intent_detected"] = early.intent
    turn.escalation = early_escalation(turn, early.intent if early else None)
    turn.timer.mark("triggers")
    if turn.escalation is not None:
        turn.reply_text = turn.escalation.message or turn.agent.escalation_message
        return True
    return False


def retrieval_phase(turn: Turn, *, usage: CallContext) -> None:
    """The knowledge passages for the turn's text (`turn.retrieval`), no connection held."""
    agent = turn.agent
    turn.retrieval = retrieve(
        agent=agent,
        query=turn.text,
        processing=agent.processing,
        knowledge_bases=turn.knowledge_bases,
        usage=usage,
    )
    turn.timer.mark("retrieve")


def model_phase(turn: Turn, *, usage: CallContext) -> None:
    """Phase 2, without a transaction or a connection of its own: context, retrieval, the
    tenant's token budget, then the model and its tools."""
    agent = turn.agent
    system = turn_system_prompt(turn)
    turn.timer.mark("context")
    retrieval_phase(turn, usage=usage)
    estimate = estimate_tokens(system) + estimate_tokens(turn.prompt_text)
    estimate += sum(estimate_tokens(t.content) for t in turn.history)
    estimate += sum(estimate_tokens(h.content) for h in turn.retrieval.hits)
    budget = ratelimit.hit(
        f"tenant-tokens:{agent.tenant_id}",
        limit=int(agent.processing["tokens_per_minute"]),
        window_s=60,
        amount=max(0, estimate),
    )
    if not budget.allowed:
        # The tenant's tokens per minute are spent: stored, no model call, one notice.
        limited = {"retry_after_s": budget.retry_after_s, "scope": "tenant_tokens"}
        limit_notice(turn, f"tenant-tokens:{turn.conversation.pk}", limited)
        return
    answered = converse(turn, request_for=request_maker(turn, system), usage=usage)
    if answered is None:
        return  # the model failed: the fallback (or an escalation) is set
    # The window corrected with real usage: in the round trip of phase 3's inbox event (the
    # engine), at once in the playground.
    turn.token_correction = turn.spent.input_tokens + turn.spent.output_tokens - estimate
    if turn.playground:
        token_correction_send(turn)
    decide(turn, *answered)


def token_correction_commands(turn: Turn) -> list[tuple[Any, ...]]:
    """The pending correction of the tenant's token window as a raw Redis command (taken: it
    is sent once)."""
    amount, turn.token_correction = turn.token_correction, 0
    if not amount:
        return []
    key = f"tenant-tokens:{turn.agent.tenant_id}"
    return [ratelimit.add_command(key, amount=amount, window_s=60)]


def token_correction_send(turn: Turn) -> None:
    """Sends the pending correction now (no inbox event took it: no reply, a rollback)."""
    amount, turn.token_correction = turn.token_correction, 0
    if amount:
        ratelimit.add(f"tenant-tokens:{turn.agent.tenant_id}", amount=amount, window_s=60)


def request_maker(turn: Turn, system: str) -> RequestMaker:
    """The model request for this turn with the actions offered and the tool rounds so far."""

    def request_for(offered: ActionSet, exchange: list[LlmMessage]) -> LlmRequest:
        return build_request(
            agent=turn.agent,
            system=system,
            history=turn.history,
            text=turn.prompt_text,
            hits=turn.retrieval.hits,
            processing=turn.agent.processing,
            actions=offered,
            exchange=exchange,
            rules=turn.rules,
        )

    return request_for


def call_context(turn: Turn) -> CallContext:
    return CallContext(
        tenant=turn.agent.tenant,
        agent_id=turn.agent.pk,
        conversation_id=turn.conversation.pk,
        message_id=turn.message.pk,
    )


def decide(turn: Turn, result: LlmResult, parsed: Any) -> None:
    """The model's answer, or an escalation its sentiment, intent, confidence or own request
    triggers."""
    rules = turn.rules or rules_for(turn.agent)
    sentiment = number_field(parsed, "sentiment", -1, 1)
    confidence = number_field(parsed, "confidence", 0, 1)
    llm_intent = parsed.fields.get("intent")
    intent = final_intent(
        turn.text,
        rules,
        keyword=turn.keyword,
        llm_intent=llm_intent if isinstance(llm_intent, str) else None,
        llm_confidence=confidence,
    )
    turn.meta.update(
        model_used=result.model,
        provider=result.provider,
        intent_detected=intent,
        sentiment=sentiment,
        confidence=confidence,
        action=parsed.name,
        broken_output=parsed.broken,
    )
    turn.rules = rules
    signals = {"sentiment": sentiment, "intent": intent, "confidence": confidence}
    turn.escalation = model_escalation(turn, parsed=parsed, signals=signals)
    if turn.escalation is not None:
        turn.reply_text = turn.escalation.message or turn.agent.escalation_message
    elif parsed.broken and parsed.raw.lstrip().startswith("{"):
        turn.reply_text = turn.agent.fallback_message  # never show the customer raw JSON
    else:
        turn.reply_text = parsed.answer or turn.agent.fallback_message
        options = options_clean(parsed.fields.get("options")) if parsed.answer else []
        if options:
            turn.meta["options"] = options  # kept with the reply; each channel shows them
