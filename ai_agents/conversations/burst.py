"""Merged bursts: one reply for the messages a customer sends in a row on a pushed channel.

People write in bursts ("hola" / "una pregunta" / "¿tienen envío a Saltillo?"). On WhatsApp and
e-mail (the channels whose replies we push) the messages of one conversation that arrive within
the agent's quiet window (`processing_config.burst_quiet_ms`, 2.5 s after the last one, at most
`burst_max_ms`, 8 s, after the first) are answered by ONE reply:

- every message is stored at once, as always, and its task (`channel_conversation_answer`)
  shows the typing indicator; while the burst is not due (`burst_wait`) the task queues a
  re-check for when it will be (a Celery countdown: no worker slot sleeps through the window)
  and leaves; only the task of the burst's newest message does, the others just leave;
- the run that takes the conversation's turn claims every unanswered message of it, oldest
  first, up to the newest at that moment (`burst_rest`, at most `BURST_MAX_MESSAGES`); the
  model sees them joined as the customer's message (`burst_text`: prompt, retrieval,
  triggers), phase 3 marks them all answered by the one reply in its transaction
  (`burst_result_statements`) and the reply names them (`metadata.burst`);
- a message stored after the claim stays unanswered: it starts the next burst (phase 3 sees it
  and the task queues its re-check), never lost, never answered twice.

The web chat and the REST API answer each message as it comes (their clients wait for it).
`burst_quiet_ms = 0` answers every message on its own, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ai_agents.conversations.burst_prefetch import prefetch_later
from ai_agents.models import Agent, Conversation, Message
from ai_agents.rules.input_bound import input_bound
from erp.tenancy import rows

if TYPE_CHECKING:
    from ai_agents.conversations.turn import Turn

# The channels whose replies are pushed (the customer is not waiting on an open request).
MERGED_CHANNELS = frozenset({"whatsapp", "email"})
# One reply answers at most this many messages (RN-4's default per minute); the rest wait
# for the next one.
BURST_MAX_MESSAGES = 20

# Stored, not yet answered: the predicate of the partial index `msg_unanswered`.
_UNANSWERED = "conversation_id = %s AND role = 'user' AND NOT (metadata ? 'result')"
# Their first and last arrival, the newest's id and their texts as the turn would join them
# (enough for every channel's input limit).
_BOUNDS = (
    "SELECT min(created_at), max(created_at),"  # noqa: S608 - no value in the text
    " (array_agg(id ORDER BY created_at DESC, id DESC))[1],"
    " left(string_agg(content, E'\\n' ORDER BY created_at, id), 8192)"
    f" FROM ai_agents_message WHERE tenant_id = %s AND {_UNANSWERED}"
)


def merges(agent: Agent, conversation: Conversation) -> bool:
    """Are this conversation's messages answered in bursts?"""
    return conversation.channel in MERGED_CHANNELS and int(agent.processing["burst_quiet_ms"]) > 0


@dataclass(frozen=True)
class BurstWait:
    """The conversation's unanswered messages: how long until they are answered (0: now) and
    the newest of them (whose task keeps the re-check)."""

    seconds: float
    newest_id: str
    text: str  # what the customer said so far, joined as the turn will join it


def burst_due_s(*, first: datetime, last: datetime, processing: Any, now: datetime) -> float:
    """Seconds until a burst whose messages arrived from `first` to `last` is answered: the
    quiet window after the last one, never later than the longest wait after the first."""
    quiet = timedelta(milliseconds=int(processing["burst_quiet_ms"]))
    longest = timedelta(milliseconds=int(processing["burst_max_ms"]))
    due = min(last + quiet, first + longest)
    return max(0.0, (due - now).total_seconds())


def burst_wait(conversation: Conversation) -> BurstWait | None:
    """For a merging conversation with unanswered messages, when they are due; None when it
    does not merge or nothing waits (the caller answers as usual). One short read."""
    agent = conversation.agent
    if not merges(agent, conversation):
        return None
    (outcome,) = rows.run_together([(_BOUNDS, [conversation.tenant_id, conversation.pk])])
    first, last, newest, text = (outcome.rows or [(None, None, None, None)])[0]
    if first is None:
        return None
    seconds = burst_due_s(first=first, last=last, processing=agent.processing, now=timezone.now())
    return BurstWait(seconds=seconds, newest_id=str(newest), text=text or "")


def burst_prefetch(conversation: Conversation, wait: BurstWait) -> None:
    """While the burst is not due: the local model's vector of its text as the turn will see
    it (cut to the channel's limit) starts in the background, so the turn finds it cached (the
    request-for-a-person detector, a knowledge search on the local model), once the burst
    seems over (`burst_prefetch.prefetch_later`: a message arriving meanwhile replaces it)."""
    text = input_bound(wait.text, conversation.channel)[0]
    if text.strip():
        prefetch_later(str(conversation.pk), text, due_in_s=wait.seconds)


def burst_rest(turn: Turn) -> list[Message]:
    """Claimed with the turn: the conversation's other unanswered messages stored by now
    (after `turn.message`, its oldest), oldest first, at most BURST_MAX_MESSAGES in all."""
    message = turn.message
    (outcome,) = rows.run_together(
        [
            rows.select_statement(
                Message,
                tenant_id=message.tenant_id,
                where=f"{_UNANSWERED} AND id <> %s",
                params=[message.conversation_id, message.pk],
                order_by="created_at, id",
                limit=BURST_MAX_MESSAGES - 1,
            )
        ]
    )
    rest = rows.instances(Message, outcome)
    for other in rest:
        other.conversation = turn.conversation
    return rest


def burst_text(turn: Turn) -> str:
    """What the customer said in this turn: their messages, one per line."""
    return "\n".join([turn.message.content, *(m.content for m in turn.burst)])


def burst_last(turn: Turn) -> Message:
    """The newest message the turn answers (the reply follows it, e-mail threads on it)."""
    return turn.burst[-1] if turn.burst else turn.message


def burst_result_statements(turn: Turn, record: dict[str, Any]) -> list[rows.Statement]:
    """The turn's `record` (`TurnResult.as_record()`) stored on the burst's other messages,
    each with its own id and the message whose result it shares: they count as answered."""
    statements = []
    for other in turn.burst:
        other.metadata = {
            **(other.metadata or {}),
            "result": {
                **record,
                "message_id": str(other.pk),
                "answered_with": str(turn.message.pk),
            },
        }
        statements.append(
            rows.update_statement(
                Message,
                tenant_id=other.tenant_id,
                pk=other.pk,
                values={"metadata": other.metadata},
            )
        )
    return statements
