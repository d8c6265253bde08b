"""The state of one message being answered (`Turn`) and its typed outcome (`TurnResult`).

The engine's phases (ai_agents/conversations/engine.py) pass one `Turn` along instead of eight
positional parameters; each phase reads what the earlier ones left on it. `TurnResult` is what
the callers get: the REST view, the SSE stream and the web chat shape their answer from it,
and `as_record()` is the body stored on the inbound message (a repeated message returns it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ai_agents.conversations.context import Rules
from ai_agents.conversations.retrieval import Retrieval
from ai_agents.models import Agent, Contact, Conversation, Message
from ai_agents.rules.escalation import EscalationDecision
from ai_agents.rules.history import HistoryItem
from ai_agents.rules.intent import IntentMatch
from erp.llm.types import LlmResult
from erp.llm.usage import cost_usd


class TurnLost(Exception):
    """The run's lease expired and another run took the conversation's turn: this run writes
    nothing more (the new holder answers the message)."""


class Timer:
    """Per-step milliseconds of one message (stored with its reply as `timings_ms`)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.last = self.started
        self.steps: dict[str, int] = {}

    def mark(self, name: str, *, within: Mapping[str, int] | None = None) -> None:
        """The time since the last mark is `name`'s, less the parts measured `within` it
        (recorded as their own steps: the tools run between the model's calls)."""
        now = time.monotonic()
        spent = int((now - self.last) * 1000)
        for part, ms in (within or {}).items():
            self.steps[part] = ms
            spent -= ms
        self.steps[name] = max(spent, 0)
        self.last = now

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started


class Spent:
    """Tokens and cost of this message's successful model calls (failed attempts cost 0;
    the gateway's usage rows hold every attempt)."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = Decimal("0")
        self.calls = 0

    def add(self, result: LlmResult) -> None:
        self.calls += 1
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens
        self.cost += cost_usd(
            provider=result.provider,
            model=result.model,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": f"{self.cost:.6f}",
        }


@dataclass
class Turn:
    """One stored inbound message being answered by the run that holds its conversation's turn
    (`token`). Filled phase by phase: read (history, knowledge bases), model (retrieval, the
    model's action, the reply), store."""

    agent: Agent
    conversation: Conversation
    message: Message  # the customer's message, stored on arrival
    token: uuid.UUID  # the conversation's turn (lease) this run holds
    timer: Timer = field(default_factory=lambda: Timer())
    on_delta: Callable[[str], None] | None = None
    contact: Contact | None = None
    history_found: list[tuple[Any, str, str, Any, str | None]] = field(default_factory=list)
    previous_intents: list[str] = field(default_factory=list)  # detected on earlier replies
    knowledge_bases: list[Any] = field(default_factory=list)
    text: str = ""  # the message cut to its channel's limit
    prompt_text: str = ""  # the same, with a note for the model when it was cut
    meta: dict[str, Any] = field(default_factory=dict)  # the reply's metadata
    retrieval: Retrieval = field(default_factory=Retrieval)
    spent: Spent = field(default_factory=lambda: Spent())
    reply_text: str | None = None
    escalation: EscalationDecision | None = None
    history: list[HistoryItem] = field(default_factory=list)
    recent: list[str] = field(default_factory=list)  # earlier customer texts (loop detection)
    rules: Rules | None = None  # the agent's triggers and intents, parsed once
    keyword: IntentMatch | None = None  # the intent its keywords matched, before the model
    # early_escalation found none of the triggers that read only the text and the history
    # (keyword, user_request, loop_detection): the check after the model skips them.
    text_triggers_clear: bool = False
    # The customer's later messages answered with this one (a merged burst, conversations/burst.py)
    burst: list[Message] = field(default_factory=list)
    pending_after: bool = False  # phase 3 gave the turn back and saw another message waiting
    model_failed: bool | None = None  # the model call failed (True) or answered (False)
    playground: bool = False  # a test run: nothing stored, tools that change data not run
    # Real tokens less the estimate counted before the model, not yet added to the tenant's
    # window (`phases.token_correction_commands`: it leaves with phase 3's inbox event).
    token_correction: int = 0


@dataclass(frozen=True)
class ReplyOut:
    id: str
    text: str
    citations: list[dict[str, Any]]
    # Choices offered with the answer ({"id", "title", "description"?}; ai_agents/rules/options.py).
    options: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class EscalationOut:
    reason: str
    priority: str


@dataclass(frozen=True)
class TurnResult:
    """The outcome of one inbound message. `reply` is None when the bot kept quiet (a person
    holds the conversation, a limit without notice, a closed conversation); `suppressed` names
    why a reply was withdrawn; `rate_limited` carries `retry_after_s` (the API answers 429);
    `ignored`: stored as already handled, never answered (reactions, our own mail)."""

    conversation_id: str
    message_id: str | None
    reply: ReplyOut | None = None
    conversation_status: str | None = None
    escalation: EscalationOut | None = None
    usage: Mapping[str, Any] = field(default_factory=lambda: Spent().as_dict())
    rate_limited: Mapping[str, Any] | None = None
    suppressed: str | None = None
    ignored: bool = False

    def as_api_body(self) -> dict[str, Any]:
        """The REST answer's JSON (a rate-limited message answers 429 instead, see the view)."""
        if self.ignored:
            return {"conversation_id": self.conversation_id, "reply": None, "ignored": True}
        body: dict[str, Any] = {
            "conversation_id": self.conversation_id,
            "message_id": self.message_id,
            "reply": None
            if self.reply is None
            else {
                "id": self.reply.id,
                "text": self.reply.text,
                "citations": list(self.reply.citations),
                "options": [dict(o) for o in self.reply.options],
            },
            "conversation_status": self.conversation_status,
            "escalation": None
            if self.escalation is None
            else {"reason": self.escalation.reason, "priority": self.escalation.priority},
            "usage": dict(self.usage),
        }
        if self.suppressed is not None:
            body["suppressed"] = self.suppressed
        return body

    def as_record(self) -> dict[str, Any]:
        """What is stored on the inbound message (`metadata["result"]`): the API body and the
        limit, so a repeat of a limited message is limited again."""
        body = self.as_api_body()
        if self.rate_limited is not None:
            body = _with_limit(body, dict(self.rate_limited))
        return body

    @classmethod
    def from_record(cls, body: Mapping[str, Any]) -> TurnResult:
        """The result `as_record` stored (a repeated message gets the first answer)."""
        reply = body.get("reply")
        escalation = body.get("escalation")
        return cls(
            conversation_id=str(body["conversation_id"]),
            message_id=body.get("message_id"),
            reply=None
            if not reply
            else ReplyOut(
                id=reply["id"],
                text=reply["text"],
                citations=reply["citations"],
                options=list(reply.get("options") or []),
            ),
            conversation_status=body.get("conversation_status"),
            escalation=None
            if not escalation
            else EscalationOut(reason=escalation["reason"], priority=escalation["priority"]),
            usage=body.get("usage") or Spent().as_dict(),
            rate_limited=body.get("rate_limited"),
            suppressed=body.get("suppressed"),
            ignored=bool(body.get("ignored")),
        )


def _with_limit(body: dict[str, Any], limit: dict[str, Any]) -> dict[str, Any]:
    """`rate_limited` in the place the stored bodies always had it: after `usage`, before
    `suppressed`."""
    suppressed = body.pop("suppressed", None)
    body["rate_limited"] = limit
    if suppressed is not None:
        body["suppressed"] = suppressed
    return body
