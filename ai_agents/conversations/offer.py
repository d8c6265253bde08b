"""The engine's hook for the customer's answer to the bot's offer of a person: right after a
reply recorded as `outcome: no_answer` (ai_agents/conversations/no_answer.py), a short "sí" /
"yes please" escalates (reason `user_request`, the detail says the customer accepted the
offer) and a "no gracias" gets a short acknowledgement from the bot (no model call); any other
message is answered as usual. One extra read (the previous reply's metadata) only when the
message reads as such an answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.translation import get_language, gettext_noop, override
from django.utils.translation import gettext as _

from ai_agents.conversations.no_answer import NO_ANSWER, OUTCOME_KEY
from ai_agents.models import Message
from ai_agents.rules.offer import offer_decision, offer_reply
from erp.llm.language import customer_language

if TYPE_CHECKING:
    from ai_agents.conversations.turn import Turn

DECLINED = gettext_noop("De acuerdo. ¿En qué más le puedo ayudar?")


def offer_answered(turn: Turn) -> bool:
    """True when this message answered the offer (escalated, or acknowledged: the reply is
    set and no model is called)."""
    kind = offer_reply(turn.text)
    if kind is None:
        return False
    previous = _previous_reply(turn)
    if previous is None or (previous[1] or {}).get(OUTCOME_KEY) != NO_ANSWER:
        return False
    if kind == "accept":
        turn.escalation = offer_decision(turn.rules.triggers if turn.rules else ())
        turn.reply_text = turn.escalation.message or turn.agent.escalation_message
        turn.meta["offer"] = "accepted"
        return True
    language = customer_language([turn.text, previous[0]], default=(get_language() or "es")[:2])
    with override(language):
        turn.reply_text = _(DECLINED)
    turn.meta["offer"] = "declined"
    return True


def _previous_reply(turn: Turn) -> tuple[str, dict[str, Any]] | None:
    """The text and metadata of the message just before this one, if the bot wrote it."""
    last = next((t for t in reversed(turn.history) if t.role in ("user", "assistant")), None)
    if last is None or last.role != "assistant" or not last.message_id:
        return None
    metadata = (
        Message.objects.for_tenant(turn.conversation.tenant_id)
        .filter(pk=last.message_id, conversation_id=turn.conversation.pk)
        .values_list("metadata", flat=True)
        .first()
    )
    return last.content, dict(metadata or {})
