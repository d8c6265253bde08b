from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from ai_agents.channels import ADAPTERS, adapter_for
from ai_agents.conversations import store
from ai_agents.conversations.burst import BurstWait, burst_prefetch, burst_wait
from ai_agents.conversations.delivery import (
    loaded_reply_deliver,
    reply_deliver,
    typing_show,
    undelivered_replies,
)
from ai_agents.conversations.delivery_sweep import claimed_reply_send, claims_sweep
from ai_agents.conversations.engine import conversation_answer_pending, conversation_load
from ai_agents.conversations.store import conversations_in_turn
from ai_agents.models import AgentTestRun, Conversation, Document, Message
from ai_agents.services import handoff_notify
from ai_agents.services.agent_test_slices import SLICE_HARD_S, SLICE_SOFT_S, agent_test_run_slice
from ai_agents.services.conversations import conversations_expire
from ai_agents.services.escalation_summary import escalation_summary_improve
from ai_agents.services.handoff_renotify import renotify_due
from ai_agents.services.history_summary import history_summary_generate
from ai_agents.services.knowledge import document_ingest
from ai_agents.services.media_store import media_expire
from ai_agents.services.typing import whatsapp_typing_due
from ai_agents.services.whatsapp_followup import followups_due
from ai_agents.services.whatsapp_media import conversation_media_resolve
from ai_agents.services.whatsapp_templates import whatsapp_templates_sync_all
from erp.db import connection_release
from erp.http.errors import HttpError
from erp.retry import Backoff
from erp.tenancy.scoping import tenant_scope

logger = logging.getLogger(__name__)

# Every task has a soft time limit (SoftTimeLimitExceeded is raised inside it: the transaction
# rolls back, the task records what it can) and a hard one (the worker process is replaced), so
# a runaway task never keeps a worker busy. A reply runs at most 20 messages of a conversation
# (RN-4), each bounded by its agent's total_timeout_ms (<= 300 s, 45 s by default).
ANSWER_SOFT_S, ANSWER_HARD_S = 600, 660
# A burst's re-check is queued this long before the burst is due and waits out the rest in
# its slot: the task's own reads (the conversation, its media, the burst) and the timer's
# latency are behind it by then, so the turn starts when the burst is due, not one timer tick
# and three queries later (issue 18's P95 from the last message to the reply). A slot sleeps
# at most this long; never through the quiet window.
BURST_EARLY_S = 0.15
BURST_CLOCK_S = 0.002  # past the due instant, not a hair before it
_sleep = time.sleep  # (a test stores a message while the re-check waits)
# A run starts no message that could end after this (each may take its agent's total_timeout_ms);
# the rest goes to a new task, and the sends after the run keep the time that is left.
ANSWER_RUN_S = 300
NOTIFY_SOFT_S, NOTIFY_HARD_S = 60, 90  # an e-mail, a database read
SEND_SOFT_S, SEND_HARD_S = 120, 150  # channel sends, retried with backoff (WhatsApp: 4 tries)
SWEEP_SOFT_S, SWEEP_HARD_S = 45, 55  # every minute: done before the next one starts
MAINTENANCE_SOFT_S, MAINTENANCE_HARD_S = 120, 150
INGEST_SOFT_S = settings.KB_INGEST_TIME_LIMIT_SECONDS
INGEST_HARD_S = INGEST_SOFT_S + 30  # the soft limit's failure is recorded on the document first


@shared_task(
    name="ai_agents.bulk_ingest_document", soft_time_limit=INGEST_SOFT_S, time_limit=INGEST_HARD_S
)
def bulk_ingest_document(document_id: str) -> str:
    """Ingests one document (bulk queue). Returns its final status; "" if it is gone."""
    document = Document.objects.unscoped().filter(pk=document_id).first()
    if document is None:
        return ""
    with tenant_scope(document.tenant_id):
        return document_ingest(document=document).status


@shared_task(
    name="ai_agents.bulk_agent_tests_run", soft_time_limit=SLICE_SOFT_S, time_limit=SLICE_HARD_S
)
def bulk_agent_tests_run(run_id: str, number: int = 0, started: float | None = None) -> str:
    """Runs one slice of a queued "Ejecutar todas" of an agent's saved tests (bulk queue;
    the slice queues the next). Returns what the slice did; "" if the run is gone."""
    run = AgentTestRun.objects.unscoped().select_related("agent").filter(pk=run_id).first()
    if run is None:
        return ""
    with tenant_scope(run.tenant_id):
        return agent_test_run_slice(run=run, number=number, started=started)


@shared_task(
    name="ai_agents.bulk_expire_conversations",
    soft_time_limit=MAINTENANCE_SOFT_S,
    time_limit=MAINTENANCE_HARD_S,
)
def bulk_expire_conversations() -> int:
    """Beat, every 15 minutes: RN-7, inactive conversations expire after 24 h."""
    expired = conversations_expire()
    if expired:
        logger.info("conversations.expired", extra={"count": expired})
    return expired


@shared_task(
    name="ai_agents.bulk_media_expire",
    soft_time_limit=MAINTENANCE_SOFT_S,
    time_limit=MAINTENANCE_HARD_S,
)
def bulk_media_expire() -> int:
    """Beat, hourly: deletes kept voice notes and images past their tenant's retention."""
    return media_expire()


@shared_task(
    name="ai_agents.bulk_whatsapp_templates_sync",
    soft_time_limit=MAINTENANCE_SOFT_S,
    time_limit=MAINTENANCE_HARD_S,
)
def bulk_whatsapp_templates_sync() -> int:
    """Beat, daily: every WhatsApp channel's templates read again from the Graph API."""
    return whatsapp_templates_sync_all()


@shared_task(
    name="ai_agents.bulk_whatsapp_followups",
    soft_time_limit=MAINTENANCE_SOFT_S,
    time_limit=MAINTENANCE_HARD_S,
)
def bulk_whatsapp_followups() -> int:
    """Beat (WHATSAPP_FOLLOWUP_SWEEP_SECONDS): the agents' follow-up templates that are due,
    each conversation at most once (`ai_agents.services.whatsapp_followup`)."""
    return followups_due()


@shared_task(
    name="ai_agents.bulk_renotify_escalations",
    soft_time_limit=MAINTENANCE_SOFT_S,
    time_limit=MAINTENANCE_HARD_S,
)
def bulk_renotify_escalations() -> int:
    """Beat (HANDOFF_RENOTIFY_SWEEP_SECONDS): RN-7, the team is reminded of escalated
    conversations nobody answers (`ai_agents.services.handoff_renotify`)."""
    return renotify_due()


@shared_task(
    name="ai_agents.conversation_escalated_notify",
    soft_time_limit=NOTIFY_SOFT_S,
    time_limit=NOTIFY_HARD_S,
)
def conversation_escalated_notify(conversation_id: str) -> dict[str, object]:
    """Tells the human team a conversation needs them (real-time queue): the model's summary
    of the conversation first when the agent has a model (bounded, extractive otherwise), then
    e-mail to the tenant's handoff recipients and, when configured, the signed webhook (its
    own retrying task, so a slow receiver never re-sends the e-mail)."""
    return _staff_notice_send(conversation_id, handoff_notify.EVENT_ESCALATED, "")


@shared_task(
    name="ai_agents.handoff_staff_notify", soft_time_limit=NOTIFY_SOFT_S, time_limit=NOTIFY_HARD_S
)
def handoff_staff_notify(conversation_id: str, event: str, text: str = "") -> dict[str, object]:
    """`ai_agents.services.handoff.staff_notify`: any event a person must hear about."""
    return _staff_notice_send(conversation_id, event, text)


def _staff_notice_send(conversation_id: str, event: str, text: str) -> dict[str, object]:
    conversation = (
        Conversation.objects.unscoped()
        .select_related("tenant", "contact", "agent")
        .filter(pk=conversation_id)
        .first()
    )
    if conversation is None:
        return {}
    with tenant_scope(conversation.tenant_id):
        if event == handoff_notify.EVENT_ESCALATED:  # the model's summary, when it has one
            language = handoff_notify.tenant_language(conversation)
            escalation_summary_improve(conversation, language)
        notice = handoff_notify.notice_build(conversation, event, text)
        logger.warning(
            "conversation.notice",
            extra={
                "event": event,
                "conversation_id": notice["conversation_id"],
                "tenant_id": str(conversation.tenant_id),
                "reason": notice["reason"],
                "priority": notice["priority"],
            },
        )
        emailed = handoff_notify.notice_email_send(conversation, notice)
        settings_row = handoff_notify.handoff_settings(conversation.tenant_id)
        webhook = bool(settings_row and settings_row.webhook_url)
    if webhook:
        handoff_webhook_send.delay(
            conversation.tenant_id, handoff_notify.notice_webhook_body(notice)
        )
    return {"event": event, "emailed": emailed, "webhook": webhook}


# Webhook retries: 5xx, 429, timeouts and connection errors, after 5, 10, 20, 40 and 80 s (or
# the receiver's Retry-After), as Celery countdowns: no worker slot waits them out.
WEBHOOK_MAX_RETRIES = 5
WEBHOOK_BACKOFF = Backoff(attempts=WEBHOOK_MAX_RETRIES + 1, base_delay_s=5.0, max_delay_s=80.0)


@shared_task(
    bind=True,
    name="ai_agents.handoff_webhook_send",
    max_retries=WEBHOOK_MAX_RETRIES,
    soft_time_limit=NOTIFY_SOFT_S,
    time_limit=NOTIFY_HARD_S,
)
def handoff_webhook_send(self: Any, tenant_id: int, body: str) -> int:
    """POSTs one notice to the tenant's webhook. Returns the answer's status (0: no webhook
    configured any more, or a permanent failure: 4xx are not retried)."""
    try:
        with tenant_scope(tenant_id):
            response = handoff_notify.notice_webhook_post(tenant_id, body)
    except HttpError as error:
        if not error.retryable or self.request.retries >= WEBHOOK_MAX_RETRIES:
            logger.warning(
                "handoff.webhook_failed",
                extra={
                    "tenant_id": tenant_id,
                    "status": error.status,
                    "error": type(error).__name__,
                },
            )
            return int(error.status or 0)
        countdown = WEBHOOK_BACKOFF.wait_s(
            self.request.retries, retry_after=error.retry_after or None
        )
        raise self.retry(countdown=countdown, exc=error) from None
    return 0 if response is None else response.status


@shared_task(
    name="ai_agents.handoff_reply_deliver", soft_time_limit=SEND_SOFT_S, time_limit=SEND_HARD_S
)
def handoff_reply_deliver(message_id: str) -> str:
    """Sends a staff member's stored reply on its conversation's channel (real-time queue)."""
    tenant_id = (
        Message.objects.unscoped().filter(pk=message_id).values_list("tenant_id", flat=True).first()
    )
    if tenant_id is None:
        return ""
    with tenant_scope(tenant_id):
        message = Message.objects.select_related("conversation__binding").filter(pk=message_id)[0]
        if message.author_id is not None and whatsapp_typing_due(message.conversation_id):
            typing_show(message.conversation)  # WhatsApp: read + typing, then the reply
        return loaded_reply_deliver(message)


# A send claimed this long ago cannot still be running: longer than any send's bounded tries
# (WhatsApp: ~80 s a part) and than the hard limit of either task that claims (prefork).
CLAIM_STALE_S = max(SEND_HARD_S, ANSWER_HARD_S)


@shared_task(
    name="ai_agents.bulk_claimed_replies_sweep",
    soft_time_limit=MAINTENANCE_SOFT_S,
    time_limit=MAINTENANCE_HARD_S,
)
def bulk_claimed_replies_sweep() -> int:
    """Beat, every CHANNEL_PENDING_SWEEP_SECONDS: the sends a dead worker left "pending" are
    taken over and queued (`ai_agents.conversations.delivery_sweep`). Returns how many."""
    return claims_sweep(stale_s=CLAIM_STALE_S, send=claimed_reply_deliver.delay)


@shared_task(
    name="ai_agents.claimed_reply_deliver", soft_time_limit=SEND_SOFT_S, time_limit=SEND_HARD_S
)
def claimed_reply_deliver(message_id: str, token: str) -> str:
    """Real-time queue: a send the sweep took over (claim time `token`), sent if still its."""
    return claimed_reply_send(message_id, token)


@shared_task(
    name="ai_agents.channel_typing_show",
    ignore_result=True,
    soft_time_limit=NOTIFY_SOFT_S,
    time_limit=NOTIFY_HARD_S,
)
def channel_typing_show(conversation_id: str) -> bool:
    """A staff member types: the channel's typing indicator (WhatsApp), best effort."""
    conversation = conversation_load(conversation_id)
    if conversation is None or conversation.status not in Conversation.OPEN_STATUSES:
        return False
    with tenant_scope(conversation.tenant_id):
        return typing_show(conversation)


# ignore_result: nobody waits on it, and with the Redis result backend every `delay()` would
# also subscribe to the result channel (~1.7 ms more per webhook acknowledgement).
@shared_task(
    name="ai_agents.channel_conversation_answer",
    ignore_result=True,
    soft_time_limit=ANSWER_SOFT_S,
    time_limit=ANSWER_HARD_S,
)
def channel_conversation_answer(
    conversation_id: str, message_id: str = "", recheck: bool = False
) -> list[str]:
    """Real-time queue: answers a conversation's stored channel messages in arrival order and
    sends the replies on its channel. Returns the delivery status of each reply sent.

    A burst not yet due (ai_agents/conversations/burst.py) is not answered now: the task of
    its newest message (`message_id`; none: the sweep's, or a run's that left some) queues a
    `recheck` for when it is due and every task leaves; no worker waits the quiet window out
    (a re-check waits its last BURST_EARLY_S)."""
    conversation = conversation_load(conversation_id)
    if conversation is None:
        return []
    with tenant_scope(conversation.tenant_id):
        if not recheck:
            _typing_for(conversation, message_id)
        if conversation.channel == "whatsapp":  # voice notes, images: read while "typing"
            conversation_media_resolve(conversation=conversation)
        wait = burst_wait(conversation)
        # Run in-process (eager: tests, no broker to wait on) it answers at once.
        eager = channel_conversation_answer.request.is_eager
        if recheck and wait is not None and 0 < wait.seconds <= BURST_EARLY_S and not eager:
            if message_id not in ("", wait.newest_id):
                return []  # a later message's task keeps the re-check
            wait = _burst_wait_out(conversation, wait)
        if wait is not None and wait.seconds > 0 and not eager:
            if message_id in ("", wait.newest_id):  # a later message's task keeps it otherwise
                _answer_later(conversation_id, wait)
                burst_prefetch(conversation, wait)
            return []
        conversation_answer_pending(conversation=conversation, deadline_s=ANSWER_RUN_S)
        # Every reply of this conversation not yet handed over: this run's, and any left by a
        # worker that stopped between storing and sending. The first goes on the read just
        # made; a later one (rare) on a read of its own: the handoff rule may have changed.
        replies = undelivered_replies(conversation)
        statuses = [
            loaded_reply_deliver(r) if not i else reply_deliver(r.pk) for i, r in enumerate(replies)
        ]
        # Left by a run stopped at its deadline, or the next burst; not while another run holds
        # the turn (it answers them, and looks again once it let the turn go).
        left = store.pending_exists(conversation=conversation) and not store.conversations_in_turn(
            [conversation.pk]
        )
        wait = burst_wait(conversation) if left else None
    if left:
        _answer_later(conversation_id, wait)
    return statuses


def _typing_for(conversation: Conversation, message_id: str) -> None:
    """The channel's typing indicator on a new message (WhatsApp: read + typing) while the bot
    will answer it."""
    adapter = adapter_for(conversation.channel)
    inbound = Message.objects.filter(pk=message_id).first() if message_id else None
    if (
        adapter is not None
        and conversation.binding is not None
        and inbound is not None
        and "result" not in (inbound.metadata or {})
        and conversation.status == Conversation.Status.ACTIVE
        and conversation.agent.is_active
    ):
        adapter.typing(binding=conversation.binding, conversation=conversation, inbound=inbound)


def _answer_later(conversation_id: str, wait: BurstWait | None) -> None:
    """Queues the conversation's answer again: at once, or BURST_EARLY_S before its burst is
    due (the re-check waits out the rest: `_burst_wait_out`)."""
    if wait is None:
        channel_conversation_answer.delay(conversation_id)
        return
    channel_conversation_answer.apply_async(
        args=(conversation_id, wait.newest_id, True),
        countdown=max(0.0, wait.seconds - BURST_EARLY_S),
    )


def _burst_wait_out(conversation: Conversation, wait: BurstWait) -> BurstWait | None:
    """The last instant before a burst is due, waited out in the re-check's slot (at most
    BURST_EARLY_S, without a database connection), then the burst looked at again: due now,
    or a message came meanwhile and its own task keeps a re-check."""
    connection_release()
    _sleep(wait.seconds + BURST_CLOCK_S)
    return burst_wait(conversation)


@shared_task(
    name="ai_agents.channel_pending_sweep", soft_time_limit=SWEEP_SOFT_S, time_limit=SWEEP_HARD_S
)
def channel_pending_sweep() -> int:
    """Beat, every CHANNEL_PENDING_SWEEP_SECONDS (a minute): channel conversations with a
    customer message stored but not answered after as long (the broker was down when it
    arrived, a worker died), or a reply stored but never handed to its channel (the run died,
    or the database went away, between storing the reply and sending it), are queued again,
    unless they are being answered right now (a run holds its turn, a lease that expires when
    its worker died: that run answers and sends them). Returns how many were queued."""
    now = timezone.now()
    window = {
        "created_at__gte": now - timedelta(hours=24),
        "created_at__lt": now - timedelta(seconds=settings.CHANNEL_PENDING_SWEEP_SECONDS),
        "conversation__binding__isnull": False,
    }
    messages = Message.objects.unscoped()
    unanswered = (
        messages.filter(role=Message.Role.USER, **window)
        .exclude(metadata__has_key="result")
        .values_list("conversation_id", flat=True)
        .distinct()[:500]
    )
    unsent = (  # the partial index msg_unsent; pulled channels (no adapter) never send
        messages.filter(
            role=Message.Role.ASSISTANT,
            delivery_status="",
            conversation__channel__in=list(ADAPTERS),
            **window,
        )
        .values_list("conversation_id", flat=True)
        .distinct()[:500]
    )
    found = list(dict.fromkeys([*unanswered, *unsent]))
    busy = conversations_in_turn(found)
    conversation_ids = [pk for pk in found if pk not in busy]
    for conversation_id in conversation_ids:
        channel_conversation_answer.delay(str(conversation_id))
    if conversation_ids:
        logger.warning("channel.pending_requeued", extra={"count": len(conversation_ids)})
    return len(conversation_ids)


@shared_task(
    name="ai_agents.conversation_history_summarize",
    soft_time_limit=MAINTENANCE_SOFT_S,
    time_limit=MAINTENANCE_HARD_S,
)
def conversation_history_summarize(conversation_id: str, upto_message_id: str) -> int:
    """Real-time queue, after a reply: the summary of the history cut out of the prompt (see
    ai_agents/services/history_summary.py). Returns how many messages it covers."""
    conversation = Conversation.objects.unscoped().filter(pk=conversation_id).first()
    if conversation is None:
        return 0
    with tenant_scope(conversation.tenant_id):
        stored = history_summary_generate(
            conversation=conversation, upto_message_id=upto_message_id
        )
    return int(stored.get("count") or 0)
