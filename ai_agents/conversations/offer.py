"""The engine's hook for the customer's answer to the bot's offer of a person: right after a
reply recorded as `outcome: no_answer` (ai_agents/conversations/no_answer.py), a short "sí" /
"yes please" escalates (reason `user_request`, the detail says the customer accepted the
offer) and a "no gracias" gets a short acknowledgement from the bot (no model call); any other
message is answered as usual. The previous reply's outcome comes with the history (no extra
read)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.translation import get_language, gettext_noop, override
from django.utils.translation import gettext as _

from ai_agents.conversations.no_answer import NO_ANSWER
from ai_agents.rules.offer import offer_decision, offer_reply
from erp.llm.language import customer_language

if TYPE_CHECKING:
    from ai_agents.conversations.turn import Turn
    from ai_agents.rules.history import HistoryItem

DECLINED = gettext_noop("De acuerdo. ¿En qué más le puedo ayudar?")


def offer_answered(turn: Turn) -> bool:
    """True when this message answered the offer (escalated, or acknowledged: the reply is
    set and no model is called)."""
    kind = offer_reply(turn.text)
    if kind is None:
        return False
    previous = _previous_reply(turn)
    if previous is None or previous.outcome != NO_ANSWER:
        return False
    if kind == "accept":
        turn.escalation = offer_decision(turn.rules.triggers if turn.rules else ())
        turn.reply_text = turn.escalation.message or turn.agent.escalation_message
        turn.meta["offer"] = "accepted"
        return True
    language = customer_language(
        [turn.text, previous.content], default=(get_language() or "es")[:2]
    )
    with override(language):
        turn.reply_text = _(DECLINED)
    turn.meta["offer"] = "declined"
    return True


def _previous_reply(turn: Turn) -> HistoryItem | None:
    """The message just before this one, if the bot wrote it (with its recorded outcome)."""
    last = next((t for t in reversed(turn.history) if t.role in ("user", "assistant")), None)
    return last if last is not None and last.role == "assistant" else None
