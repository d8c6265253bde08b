"""A customer message whose answering keeps failing is not retried for ever (a poison message).

Each time a run takes a pending message to answer it, `store.turn_next` counts the attempt in
the message's `attempts` column, in the round trip that takes the turn (no extra one). A run
that dies on it (the worker replaced at the task's hard time limit, a crash) or fails leaves it
unanswered, and `channel_pending_sweep` queues it again, for up to 24 h. Once a message was
taken `MAX_ANSWER_ATTEMPTS` times without an answer, the next run gives up on it: no model
call, the customer is told in words (their language) that a person will answer, and the
conversation is escalated (reason `processing_failed`, high priority) to the team's inbox.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.utils.translation import get_language, gettext_noop, override
from django.utils.translation import gettext as _

from ai_agents.rules.detail import detail
from ai_agents.rules.escalation import EscalationDecision
from erp.llm.language import customer_language
from erp.tenancy import rows

if TYPE_CHECKING:
    from ai_agents.conversations.turn import Turn

logger = logging.getLogger(__name__)

MAX_ANSWER_ATTEMPTS = 3
REASON = "processing_failed"
GAVE_UP = gettext_noop(
    "Lo siento, no he podido procesar su mensaje. Le paso con una persona del equipo, que le "
    "responderá lo antes posible."
)

_COUNT = """
UPDATE ai_agents_message SET attempts = attempts + 1
WHERE tenant_id = %s AND id = (
  SELECT id FROM ai_agents_message WHERE tenant_id = %s AND {pending}
  ORDER BY created_at, id LIMIT 1)
AND EXISTS (SELECT 1 FROM ai_agents_conversation
  WHERE tenant_id = %s AND id = {conversation} AND turn_token = %s)
"""


def attempt_count_statement(
    *, tenant_id: int, pending: rows.Statement, conversation: rows.Statement, token: Any
) -> rows.Statement:
    """+1 on the `attempts` of the oldest pending message (`pending`: its WHERE), when the run
    holding `token` has the conversation's turn (taken earlier in the same round trip)."""
    sql = _COUNT.format(pending=pending[0], conversation=conversation[0])
    return sql, [tenant_id, tenant_id, *pending[1], tenant_id, *conversation[1], token]


def attempts_exhausted(turn: Turn) -> bool:
    """True (the reply and the escalation set) when the message was taken too often already."""
    attempts = turn.message.attempts
    if attempts <= MAX_ANSWER_ATTEMPTS:
        return False
    failed = attempts - 1
    turn.escalation = EscalationDecision(
        reason=REASON,
        priority="high",
        trigger_type=REASON,
        detail=detail(gettext_noop("no se pudo procesar el mensaje tras %(n)s intentos"), n=failed),
        layer="failure",
    )
    default = (get_language() or "es")[:2]
    with override(customer_language([turn.message.content[:2000]], default=default)):
        turn.reply_text = _(GAVE_UP)
    turn.meta["gave_up"] = {"attempts": failed}
    logger.warning(
        "pipeline.message_gave_up",
        extra={"message_id": str(turn.message.pk), "attempts": failed},
    )
    return True
